"""The SavedModel fuzz mode's mutations (tools/fuzz_saved_model.py): a seed's saved_model.pb
as bytes or as a message, its checkpoint index and shards, its assets, and special files
(FIFOs, /dev/zero links, links leaving the directory) made on disk for a case."""

from __future__ import annotations

import os
import random
import tempfile
from typing import Dict, List, Tuple

from tf2ir.tools.fuzz_mutate import _int, _varint, mutate_bytes
from tf2ir.tools.fuzz_mutate_graph import mutate_graph_def
from tf2ir.tools.fuzz_saved_model_table import mutate_index_entries

PREFIX = ".savedmodel/"                 # Case.files keys: "case" + PREFIX + path in the dir
CANARY_NAME = "canary.txt"              # beside the SavedModel directory, in the worker's folder
CANARY = b"tf2ir-fuzz-canary-7f3a9c"   # what a leak of the canary file puts into a model
CANARY_ABS = os.path.join(tempfile.gettempdir(), "tf2ir-fuzz-canary.txt")   # the same in every case
INDEX = "variables/variables.index"


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



STRINGY = (b"\xff\xfe\xfd", b"", b"../x", b"\x00", b"a" * 10000, b"\xc3", "\u00fc".encode())


def mutate_saved_model_structure(data: bytes, rng: random.Random, corpus, ops: List[str]) -> bytes:
    """saved_model.pb edited as a message: its GraphDef by tools/fuzz_mutate_graph.py's graph
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
