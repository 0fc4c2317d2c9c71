"""Defects the fuzz harness found, each as the smallest graph that shows it: the result is a
one-line ConversionError naming the node, quickly, instead of a hang or a memory blow-up."""

from __future__ import annotations

import time

import pytest
from tensorboard.compat.proto import graph_pb2

from tf2ir.ir import ConversionError
from tf2ir.parser.pipeline import convert_graph_def


def _graph(op, count_attr=None, count=None, batch_dims=None):
    g = graph_pb2.GraphDef()
    x = g.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = 1
    for d in (4, 6):
        x.attr["shape"].shape.dim.add().size = d
    axis = g.node.add(name="axis", op="Const")
    axis.attr["dtype"].type = 3
    axis.attr["value"].tensor.dtype = 3
    axis.attr["value"].tensor.int_val.append(1)
    if op == "Split":
        node = g.node.add(name="node", op="Split", input=["axis", "x"])
    elif op == "Unpack":
        node = g.node.add(name="node", op="Unpack", input=["x"])
    else:
        indices = g.node.add(name="indices", op="Const")
        indices.attr["dtype"].type = 3
        indices.attr["value"].tensor.dtype = 3
        indices.attr["value"].tensor.tensor_shape.dim.add().size = 2
        indices.attr["value"].tensor.int_val.extend([0, 1])
        node = g.node.add(name="node", op="GatherV2", input=["x", "indices", "axis"])
        node.attr["Tindices"].type = 3
        node.attr["Taxis"].type = 3
        node.attr["batch_dims"].i = batch_dims
    node.attr["T" if op != "GatherV2" else "Tparams"].type = 1
    if count_attr:
        node.attr[count_attr].i = count
    return g


@pytest.mark.parametrize("op, attr, count", [("Split", "num_split", 2 ** 31),
                                             ("Unpack", "num", 2 ** 63 - 1),
                                             ("Split", "num_split", -3)])
def test_a_huge_output_count_is_refused_at_once(op, attr, count):
    start = time.perf_counter()
    with pytest.raises(ConversionError) as info:
        convert_graph_def(_graph(op, attr, count), "m.pb", outputs=["node"])
    assert time.perf_counter() - start < 5
    assert "node 'node'" in str(info.value) and attr in str(info.value)


@pytest.mark.parametrize("batch_dims", [-2 ** 63, 2 ** 40, 3])
def test_gather_batch_dims_out_of_range_is_refused(batch_dims):
    with pytest.raises(ConversionError) as info:
        convert_graph_def(_graph("GatherV2", batch_dims=batch_dims), "m.pb", outputs=["node"])
    assert "batch_dims" in str(info.value) and "node 'node'" in str(info.value)


# -- found by tools/fuzz.py's savedmodel and manifest kinds (issue 21) --------------------------------
# Each case is built here as the smallest form of what the fuzzer saved, and run by the fuzz harness
# in a worker process (memory, time and file limits, as a fuzz run has them): the outcome must be a
# clean one-line error, where the code before the fixes gave silent corruption, a hang, a memory
# blow-up, a crash or a file written outside -o.
import json as _json
import os as _os

from tf2ir.tools import fuzz as _fuzz


def _run_harness(cases, tmp_path):
    """{index: Result} of the fuzz harness running `cases` (Case objects) in a worker."""
    import dataclasses

    def make(corpus, kind, index, seed):
        return dataclasses.replace(cases[index], index=index)
    config = _fuzz.Config(time_limit=5.0, memory_mb=1024, kill_after=10.0)
    fuzzer = _fuzz.Fuzzer([cases[0].kind], seed=0, jobs=1, config=config, save_dir=str(tmp_path),
                          corpus=_fuzz.Corpus([], [], [], [], [], _SEEDS.get("seeds", [])),
                          make=make)
    seen = {}
    record = fuzzer.record

    def keep(result):
        seen[result.index] = result
        record(result)
    fuzzer.record = keep
    fuzzer.run(cases=len(cases))
    return seen


_SEEDS = {}


def _saved_model(name):
    """(seed files, Case maker) for one seed SavedModel made with TensorFlow (cached)."""
    from tf2ir.tools import fuzz_saved_model as fsm
    if "seeds" not in _SEEDS:
        try:
            fsm.build_seeds()
        except Exception as exc:
            pytest.skip(f"no SavedModel seeds (TensorFlow makes them): {exc}")
        _SEEDS["seeds"] = fsm.load_seeds()
    files = dict(dict(_SEEDS["seeds"])[name])

    def case(files_, mutations, special=None):
        return _fuzz.Case("savedmodel", 0, {fsm.PREFIX + k: v for k, v in files_.items()}, name,
                          mutations, {fsm.PREFIX + k: v for k, v in (special or {}).items()})
    return files, case


def _entries(files):
    from tf2ir.parser.tensor_bundle import bundle_messages
    from tf2ir.tools import fuzz_saved_model as fsm
    entry_class = bundle_messages()[1]
    table = fsm.read_table(files[fsm.INDEX])
    return table, {k: entry_class.FromString(v) for k, v in table if k}


def _with_entry(files, key, **fields):
    from tf2ir.tools import fuzz_saved_model as fsm
    table, entries = _entries(files)
    entry = entries[key]
    for name, value in fields.items():
        setattr(entry, name, value)
    table = [(k, entry.SerializeToString() if k == key else v) for k, v in table]
    return {**files, fsm.INDEX: fsm.write_table(table)}


def test_fuzz_savedmodel_classes_end_in_one_clean_error(tmp_path):
    """Findings 5, 8, 10 and 15 as the fuzzer met them: a flipped bit in a weight and an entry
    offset moved by 4 bytes (silent corruption before: TensorFlow refuses both, "Checksum does
    not match"); a FIFO as variables.index or as the shard (hang); variables.index linked to
    /dev/zero (memory); an entry whose dtype is DT_RESOURCE (ValueError, ir/tensor.py)."""
    from tf2ir.tools import fuzz_saved_model as fsm
    files, case = _saved_model("dense")
    shard = "variables/variables.data-00000-of-00001"
    _, entries = _entries(files)
    weight = entries[b"w/.ATTRIBUTES/VARIABLE_VALUE"]
    flipped = bytearray(files[shard])
    flipped[weight.offset + 5] ^= 0x10
    first = min(entries, key=lambda k: entries[k].offset)
    cases = [
        case({**files, shard: bytes(flipped)}, ["shard:flip"]),
        case(_with_entry(files, first, offset=entries[first].offset + 4), ["index:entry.offset"]),
        case({k: v for k, v in files.items() if k != fsm.INDEX}, ["special"], {fsm.INDEX: "fifo"}),
        case({k: v for k, v in files.items() if k != shard}, ["special"], {shard: "fifo"}),
        case({k: v for k, v in files.items() if k != fsm.INDEX}, ["special"], {fsm.INDEX: "devzero"}),
        case(_with_entry(files, b"b/.ATTRIBUTES/VARIABLE_VALUE", dtype=20), ["index:entry.dtype"]),
    ]
    results = _run_harness(cases, tmp_path)
    outcomes = [(results[i].outcome, results[i].key[0]) for i in range(len(cases))]
    assert outcomes == [("error", "")] * len(cases), outcomes
    assert "checksum" in results[0].error and "checksum" in results[1].error
    assert "regular file" in results[2].error and "regular file" in results[3].error
    assert "resource" in results[5].error


def test_fuzz_non_utf8_restore_tensor_name_is_not_a_crash(tmp_path):
    """Finding 10: RestoreV2's tensor_names holding b'\\xc3' (not UTF-8) raised
    UnicodeDecodeError in parser/checkpoint_keys.py; now the directory converts or is refused
    in one line."""
    from tf2ir.parser.tensor_bundle import bundle_messages
    files, case = _saved_model("dense")
    message = bundle_messages()[2].FromString(files["saved_model.pb"])
    changed = 0
    for function in message.meta_graphs[0].graph_def.library.function:
        for node in function.node_def:
            if node.name.startswith("RestoreV2/tensor_names"):
                node.attr["value"].tensor.string_val[0] = b"\xc3"
                changed += 1
    assert changed
    results = _run_harness([case({**files, "saved_model.pb": message.SerializeToString()},
                                 ["struct:string-const"])], tmp_path)
    assert results[0].outcome in ("ok", "error"), results[0]


def _manifest(text, fmt="json"):
    import random
    from tf2ir.tools import fuzz_manifest as fm
    corpus = _fuzz.build_corpus(kinds=("manifest",))
    files, special, _ = fm.make_manifest_case(corpus, random.Random(0), [])
    first = next(iter(files))
    files = {first.rsplit("/", 1)[0] + f"/list.{fmt}": text.encode(),
             **{k: v for k, v in files.items() if k != first}}
    return _fuzz.Case("manifest", 0, files, "regression", [fmt], special)


BOMB = "\n".join(["l0: &l0 [lol]"] + [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 5) + "]"
                                     for i in range(1, 12)]) + "\nmodels:\n  - {path: a.pb, inputs: *l11}\n"


def test_fuzz_manifest_classes_end_in_one_clean_error(tmp_path):
    """Findings 2, 9 and 10 as the fuzzer met them, run as `tf2ir batch MANIFEST -o out`: an
    output that is an int (TypeError), that holds a NUL (ValueError), that leaves -o through
    `..`, an absolute path, a symlinked folder in -o or `sub/../..` (written outside -o, exit
    0), and a 600-byte YAML alias bomb (hang): each is now one clean error, nothing written."""
    cases = [_manifest(_json.dumps([{"path": "a.pb", "output": out}]))
             for out in (5, "x.onnx\x00", "../victim.onnx", "@ROOT@/outside/abs.onnx",
                         "escape/x.onnx", "sub/../../x.onnx")]
    cases.append(_manifest(BOMB, "yaml"))
    results = _run_harness(cases, tmp_path)
    outcomes = [(results[i].outcome, results[i].key[0]) for i in range(len(cases))]
    assert outcomes == [("error", "")] * len(cases), outcomes
    assert all(results[i].seconds < 5 for i in range(len(cases)))
