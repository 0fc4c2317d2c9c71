"""A hostile SavedModel stays harmless (issue 21): the native reader opens only regular files
inside the SavedModel directory with bounded reads, checks every index field it uses and
the crc32c of every checkpoint entry it reads, and asset paths are checked before
TensorFlow loads the directory; a Const of a handle dtype is one clean error. Each case
checks the end state: the exit status, one error line naming the file/variable/node, and
no ONNX file written."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import run_onnx

tf = pytest.importorskip("tensorflow")
READER = "TF2IR_SAVED_MODEL_READER"
KEY = "w/.ATTRIBUTES/VARIABLE_VALUE"
W = np.arange(12, dtype=np.float32).reshape(4, 3) / 8


class Small(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(W)

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
    def serve(self, x):
        return {"y": tf.matmul(x, self.w)}


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    module = Small()
    path = str(tmp_path_factory.mktemp("small") / "small")
    tf.saved_model.save(module, path, signatures={"serving_default": module.serve})
    return path


@pytest.fixture()
def saved(small, tmp_path):
    """A fresh copy of the small SavedModel for a test to mutate."""
    path = str(tmp_path / "model")
    shutil.copytree(small, path)
    return path


def _cli(*args, env=None, timeout=120):
    """The tf2ir command line in a fresh process, killed after `timeout` seconds (a FIFO
    read that blocks fails the test instead of hanging it)."""
    return subprocess.run([sys.executable, "-m", "tf2ir.tools.cli", *args], capture_output=True,
                          text=True, env=env, timeout=timeout)


def _refused(saved, tmp_path, code, *needles, reader=None, timeout=120):
    """Convert `saved` (SavedModel `reader`: native, tf, or None for native then TensorFlow
    where the native reader refuses): exit `code`, one error line holding every needle, no
    output file."""
    out = str(tmp_path / "out.onnx")
    env = dict(os.environ)
    env.pop(READER, None)
    if reader:
        env[READER] = reader
    result = _cli("convert", saved, "-o", out, env=env, timeout=timeout)
    assert result.returncode == code, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tf2ir: error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert not os.path.exists(out)
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".onnx") or ".tmp" in f]
    return lines[0]


def _shard(saved):
    return os.path.join(saved, "variables", "variables.data-00000-of-00001")


def _index(saved):
    return os.path.join(saved, "variables", "variables.index")


# -- rewriting a checkpoint index (a LevelDB-format table, as tensor_bundle.py reads it) --------
def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _masked_crc32c(data: bytes) -> int:
    import google_crc32c
    crc = google_crc32c.value(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def _block(entries) -> bytes:
    body = b"".join(_varint(0) + _varint(len(k)) + _varint(len(v)) + k + v for k, v in entries)
    body += struct.pack("<II", 0, 1)        # one restart point, at 0
    return body + b"\0" + struct.pack("<I", _masked_crc32c(body + b"\0"))


def _write_index(path, items) -> None:
    """A table holding (key, value) `items` (sorted), one data block."""
    data = _block(items)
    meta = _block([])
    handle = _varint(0) + _varint(len(data) - 5)
    index = _block([(items[-1][0], handle)])
    footer = _varint(len(data)) + _varint(len(meta) - 5)
    footer += _varint(len(data) + len(meta)) + _varint(len(index) - 5)
    footer = footer.ljust(40, b"\0") + struct.pack("<Q", 0xDB4775248B80FB57)
    with open(path, "wb") as f:
        f.write(data + meta + index + footer)


def _mutate_entry(saved, key, change) -> None:
    """Rewrite `saved`'s checkpoint index with entry `key` passed through `change`."""
    from tf2ir.parser.tensor_bundle import _Table, bundle_messages
    entry_class = bundle_messages()[1]
    with open(_index(saved), "rb") as f:
        items = [(k, bytes(v)) for k, v in _Table(f.read()).items()]
    for i, (k, v) in enumerate(items):
        if k == key.encode():
            entry = entry_class.FromString(v)
            change(entry)
            items[i] = (k, entry.SerializeToString())
    _write_index(_index(saved), items)


def test_rewritten_index_reads_the_same(saved, tmp_path):
    """The helper's own table reads back as TensorFlow wrote it (the cases below rely on it)."""
    from tf2ir.parser.tensor_bundle import TensorBundle
    _mutate_entry(saved, KEY, lambda e: None)
    bundle = TensorBundle(os.path.join(saved, "variables", "variables"))
    np.testing.assert_array_equal(bundle.tensor(KEY)[2], W)
    out = str(tmp_path / "m.onnx")
    assert _cli("convert", saved, "-o", out).returncode == 0
    x = np.ones((2, 4), np.float32)
    np.testing.assert_allclose(run_onnx(out, {"x": x})[0], x @ W, rtol=1e-6)


# -- finding 5: checksums -------------------------------------------------------------------------
def test_a_flipped_bit_in_a_shard_is_a_checksum_error(saved, tmp_path):
    from tf2ir.parser.tensor_bundle import TensorBundle
    entry = TensorBundle(os.path.join(saved, "variables", "variables")).entries[KEY]
    with open(_shard(saved), "r+b") as f:
        f.seek(entry.offset + 5)
        byte = f.read(1)[0]
        f.seek(entry.offset + 5)
        f.write(bytes([byte ^ 0x10]))
    line = _refused(saved, tmp_path, 1, "checksum does not match", KEY, "node 'Variable'",
                    "variables.data-00000-of-00001")
    assert "stored 0x" in line and "computed 0x" in line


def _string_checkpoint(tmp_path):
    from tf2ir.parser.tensor_bundle import TensorBundle
    words = np.array([b"alpha", b"", b"\xff binary \x00", b"longer word " * 30])
    prefix = tf.train.Checkpoint(words=tf.Variable(words)).write(str(tmp_path / "ckpt"))
    key = "words/.ATTRIBUTES/VARIABLE_VALUE"
    bundle = TensorBundle(prefix)
    np.testing.assert_array_equal(bundle.tensor(key)[2], words)   # TF's crc matches ours
    return prefix, key, bundle.entries[key]


@pytest.mark.parametrize("where", ["string bytes", "string length", "index block"])
def test_string_entries_and_index_blocks_are_checksummed(where, tmp_path):
    """A string tensor's crc covers what TensorFlow's covers: the lengths, their checksum and
    the bytes; the index's blocks carry crcs of their own."""
    from tf2ir.ir.errors import ConversionError
    from tf2ir.parser.tensor_bundle import TensorBundle
    prefix, key, entry = _string_checkpoint(tmp_path)
    path, at = prefix + ".data-00000-of-00001", entry.offset + entry.size - 3
    if where == "string length":
        at = entry.offset + 1      # "" → "\x01": the lengths' checksum no longer matches
    elif where == "index block":
        path, at = prefix + ".index", 10
    with open(path, "r+b") as f:
        f.seek(at)
        byte = f.read(1)[0]
        f.seek(at)
        f.write(bytes([byte ^ 0x01]))
    with pytest.raises(ConversionError, match="checksum does not match") as info:
        TensorBundle(prefix).tensor(key)
    assert (key if where != "index block" else ".index") in str(info.value)


# -- finding 8: regular files only, bounded reads, paths inside the directory --------------------
@pytest.mark.parametrize("which", ["index", "shard"])
def test_a_fifo_in_the_checkpoint_is_refused_without_blocking(which, saved, tmp_path):
    path = _index(saved) if which == "index" else _shard(saved)
    os.remove(path)
    os.mkfifo(path)
    _refused(saved, tmp_path, 1, "is not a regular file", os.path.basename(path), timeout=60)


@pytest.mark.parametrize("which", ["index", "shard"])
def test_a_device_in_the_checkpoint_is_refused(which, saved, tmp_path):
    """/dev/zero as the index or a shard: refused as leaving the directory, and (with no
    directory to stay in) as not a regular file, never read."""
    from tf2ir.ir.errors import ConversionError
    from tf2ir.parser.tensor_bundle import TensorBundle
    path = _index(saved) if which == "index" else _shard(saved)
    os.remove(path)
    os.symlink("/dev/zero", path)
    _refused(saved, tmp_path, 1, "leaves the SavedModel directory", os.path.basename(path))
    with pytest.raises(ConversionError, match="is not a regular file"):
        TensorBundle(os.path.join(saved, "variables", "variables")).tensor(KEY)


def test_the_index_read_is_bounded(saved, monkeypatch):
    from tf2ir.ir.errors import ConversionError
    from tf2ir.parser import tensor_bundle
    monkeypatch.setattr(tensor_bundle, "MAX_INDEX_BYTES", 64)
    with pytest.raises(ConversionError, match="more than the 64"):
        tensor_bundle.TensorBundle(os.path.join(saved, "variables", "variables"))


@pytest.mark.parametrize("reader", ["native", "tf"])
def test_a_shard_linked_outside_the_directory_is_refused(reader, saved, tmp_path):
    """A symlinked shard that would read (here: a valid copy) from outside the SavedModel:
    refused natively and before TensorFlow loads the directory; a FIFO too (TF would block)."""
    outside = str(tmp_path / "elsewhere.data")
    shutil.move(_shard(saved), outside)
    os.symlink(outside, _shard(saved))
    _refused(saved, tmp_path, 1, "leaves the SavedModel directory",
             "variables.data-00000-of-00001", reader=reader)
    if reader == "tf":
        os.remove(_index(saved))
        os.mkfifo(_index(saved))
        os.remove(_shard(saved))
        shutil.move(outside, _shard(saved))
        _refused(saved, tmp_path, 1, "is not a regular file", "variables.index", reader=reader,
                 timeout=60)


# -- finding 10, the checkpoint half: every index field checked ---------------------------------
def _dims(*sizes):
    def change(entry):
        del entry.shape.dim[:]
        for size in sizes:
            entry.shape.dim.add(size=size)
    return change


def _fields(**values):
    def change(entry):
        for name, value in values.items():
            setattr(entry, name, value)
    return change


CRASHES = {   # each an uncaught ValueError before
    "negative dims whose product fits the size": (_dims(-2, -6), "negative dimension"),
    "dims whose int64 product wraps to the size": (_dims((1 << 62) + 3, 4), "too large"),
    "a variant entry": (_fields(dtype=21), "dtype variant"),
    "a string entry with a negative dim": (lambda e: (_fields(dtype=7)(e), _dims(-3, 1)(e)),
                                          "negative dimension"),
}


@pytest.mark.parametrize("case", sorted(CRASHES))
def test_bad_checkpoint_entries_are_one_line(case, saved, tmp_path):
    change, needle = CRASHES[case]
    _mutate_entry(saved, KEY, change)
    _refused(saved, tmp_path, 1, needle, KEY, "node 'Variable'", reader="native")


@pytest.mark.parametrize("dims", [(3, 4), (12,), (1, 4, 3)])
def test_an_entry_shaped_unlike_its_variable_is_refused(dims, saved, tmp_path):
    """The same 12 weights under other dims (the index's checksum still holds: it covers the
    bytes) converted to a model of another shape, or a wrong one (the savedmodel fuzz kind:
    silent corruption); TensorFlow's restore refuses the shape, and so does tf2ir."""
    _mutate_entry(saved, KEY, _dims(*dims))
    _refused(saved, tmp_path, 1, f"has shape {list(dims)}", "the variable is declared [4, 3]",
             KEY, reader="native")


@pytest.mark.parametrize("change,needle", [
    (_dims(1 << 40, 1 << 40), "too large"), (_dims(*[1] * 70), "too large"),
    (lambda e: setattr(e.shape, "unknown_rank", True), "unknown rank"),
    (_fields(dtype=20), "dtype resource"), (_fields(dtype=101), "dtype float32_ref"),
    (_fields(dtype=99), "dtype enum 99"), (_fields(shard_id=3), "names shard 3"),
    (_fields(shard_id=-1), "names shard -1"), (_fields(offset=-8), "lies outside its shard"),
    (_fields(size=10 ** 6), "lies outside its shard"), (_fields(size=-4), "lies outside"),
    (_fields(size=44), "has 44 bytes"), (_dims(4, 4), "has 48 bytes")])
def test_every_index_field_is_checked(change, needle, saved):
    from tf2ir.ir.errors import ConversionError
    from tf2ir.parser.tensor_bundle import TensorBundle
    _mutate_entry(saved, KEY, change)
    with pytest.raises(ConversionError, match=needle) as info:
        TensorBundle(os.path.join(saved, "variables", "variables")).tensor(KEY)
    assert KEY in str(info.value)


def _rename_restore_key(saved, old: bytes, new: bytes) -> int:
    from tf2ir.parser.tensor_bundle import bundle_messages
    path = os.path.join(saved, "saved_model.pb")
    with open(path, "rb") as f:
        model = bundle_messages()[2].FromString(f.read())
    graph, count = model.meta_graphs[0].graph_def, 0
    for body in [graph.node] + [f.node_def for f in graph.library.function]:
        for node in body:
            values = node.attr["value"].tensor.string_val if node.op == "Const" else []
            for i, value in enumerate(values):
                if value == old:
                    values[i], count = new, count + 1
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return count


def test_a_non_utf8_restore_name(saved, tmp_path):
    """TF2: the object graph binds the variable, as TensorFlow's loader does; TF1 (the
    restore op is all there is): one line naming the variable and the missing entry."""
    assert _rename_restore_key(saved, KEY.encode(), b"w/\xff.ATTRIBUTES/VARIABLE_VALUE")
    out = str(tmp_path / "tf2.onnx")
    result = _cli("convert", saved, "-o", out, env=dict(os.environ, **{READER: "native"}))
    assert result.returncode == 0, result.stderr
    x = np.ones((2, 4), np.float32)
    np.testing.assert_allclose(run_onnx(out, {"x": x})[0], x @ W, rtol=1e-6)
    tf1, export = tf.compat.v1, str(tmp_path / "tf1")
    graph = tf.Graph()
    with graph.as_default():
        x1 = tf1.placeholder(tf.float32, [None, 3], name="x")
        w = tf1.get_variable("w", initializer=np.full((3,), 0.5, np.float32), use_resource=True)
        with tf1.Session(graph=graph) as session:
            session.run(tf1.global_variables_initializer())
            tf1.saved_model.simple_save(session, export, {"x": x1}, {"y": x1 * w})
    assert _rename_restore_key(export, b"w", b"w\xff")
    os.remove(out)
    _refused(export, tmp_path, 1, "node 'w'", r"checkpoint has no entry 'w\xff'", reader="native")


# -- finding 4: asset paths, checked before TensorFlow loads the directory -----------------------
@pytest.fixture(scope="module")
def vocabulary(tmp_path_factory):
    from tests.parser.test_saved_model_native import _vocabulary_file_model
    return _vocabulary_file_model(tmp_path_factory.mktemp("vocab"))


def _vocabulary_model(vocabulary, tmp_path, filename=None):
    """A copy of the vocabulary-file model (the native reader refuses it, TensorFlow loads
    it), its AssetFileDef filename set to `filename`; a host file with secret lines beside it."""
    from tf2ir.parser.tensor_bundle import bundle_messages
    saved = str(tmp_path / "vocab")
    shutil.copytree(vocabulary, saved)
    (tmp_path / "host_secret.txt").write_text("secret-1\nsecret-2\n")
    if filename is not None:
        path = os.path.join(saved, "saved_model.pb")
        with open(path, "rb") as f:
            model = bundle_messages()[2].FromString(f.read())
        assets = model.meta_graphs[0].asset_file_def
        assert len(assets) == 1 and assets[0].filename == "vocab.txt"
        assets[0].filename = filename
        with open(path, "wb") as f:
            f.write(model.SerializeToString())
    return saved


@pytest.mark.parametrize("filename", ["../../host_secret.txt", "ABSOLUTE"])
def test_an_asset_name_leaving_the_directory_is_refused_before_tensorflow(filename, vocabulary,
                                                                          tmp_path):
    if filename == "ABSOLUTE":
        filename = str(tmp_path / "host_secret.txt")
    saved = _vocabulary_model(vocabulary, tmp_path, filename)
    _refused(saved, tmp_path, 1, "leaves the SavedModel's assets directory", repr(filename))


def test_an_asset_linked_outside_the_directory_is_refused(vocabulary, tmp_path):
    saved = _vocabulary_model(vocabulary, tmp_path)
    asset = os.path.join(saved, "assets", "vocab.txt")
    os.remove(asset)
    os.symlink(str(tmp_path / "host_secret.txt"), asset)
    _refused(saved, tmp_path, 1, "leaves the SavedModel's assets directory", "'vocab.txt'")


def test_a_table_reading_a_constant_path_outside_is_refused(tmp_path):
    """A file initializer fed a constant file name (no asset) outside the directory."""
    from tf2ir.ir.errors import ConversionError
    from tf2ir.parser.saved_model import check_before_tensorflow
    from tf2ir.parser.tensor_bundle import bundle_messages
    model = bundle_messages()[2]()
    graph = model.meta_graphs.add().graph_def
    name = graph.node.add(name="fname", op="Const")
    name.attr["value"].tensor.dtype = 7
    name.attr["value"].tensor.string_val.append(str(tmp_path / "host_secret.txt").encode())
    graph.node.add(name="table", op="HashTableV2")
    graph.node.add(name="init", op="InitializeTableFromTextFileV2", input=["table", "fname"])
    saved = tmp_path / "crafted"
    saved.mkdir()
    (saved / "saved_model.pb").write_bytes(model.SerializeToString())
    with pytest.raises(ConversionError, match="outside the SavedModel directory") as info:
        check_before_tensorflow(str(saved))
    assert info.value.node == "init"


# -- finding 15: a Const of a handle dtype --------------------------------------------------------
@pytest.mark.parametrize("dtype,name", [(21, "variant"), (20, "resource"), (121, "variant")])
def test_a_handle_dtype_const_is_one_line(dtype, name, tmp_path):
    from tf2ir.parser.graph_view import graph_def_class
    graph = graph_def_class()()
    const = graph.node.add(name="c", op="Const")
    const.attr["dtype"].type = dtype % 100
    const.attr["value"].tensor.dtype = dtype
    graph.node.add(name="out", op="Identity", input=["c"]).attr["T"].type = dtype % 100
    model = tmp_path / "handle.pb"
    model.write_bytes(graph.SerializeToString())
    _refused(str(model), tmp_path, 3, "node 'c'", "op Const", f"dtype {name} is not supported")
