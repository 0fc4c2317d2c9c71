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


# -- the classes still open after the first round (tests/data/fuzz/make_open_reproducers.py) ---------
def _edit_graph(files, edit):
    """`files` with saved_model.pb's graph edited by `edit(graph_def)`."""
    from tf2ir.parser.tensor_bundle import bundle_messages
    message = bundle_messages()[2].FromString(files["saved_model.pb"])
    edit(message.meta_graphs[0].graph_def)
    return {**files, "saved_model.pb": message.SerializeToString()}


def _first_call(nodes):
    return next(n for n in nodes if n.op in ("StatefulPartitionedCall", "PartitionedCall"))


def test_fuzz_malformed_refs_and_call_lists_end_in_one_clean_error(tmp_path):
    """Classes A and B: an outer-graph input port that is not a number ('x:x', ValueError in
    parser/resources.py), the same in a function body ('node:output:x'), a call inside a
    function whose Tin lists fewer types than it has inputs and an outer call whose Tin is
    empty (IndexError): each is one clean error (or converts), never a crash."""
    files, case = _saved_model("dense")

    def outer_port(g):
        call = _first_call(g.node)
        call.input[-1] = call.input[-1].split(":")[0] + ":x"

    def body_port(g):
        for f in g.library.function:
            for n in f.node_def:
                refs = [i for i, r in enumerate(n.input) if r.count(":") == 2]
                if refs:
                    n.input[refs[0]] = n.input[refs[0]].rsplit(":", 1)[0] + ":x"
                    return

    def short_inner_tin(g):
        _first_call(n for f in g.library.function for n in f.node_def).attr["Tin"].list.type.pop()

    def empty_outer_tin(g):
        del _first_call(g.node).attr["Tin"].list.type[:]
    cases = [case(_edit_graph(files, edit), ["struct"])
             for edit in (outer_port, body_port, short_inner_tin, empty_outer_tin)]
    results = _run_harness(cases, tmp_path)
    outcomes = [(results[i].outcome, results[i].key[0]) for i in range(len(cases))]
    assert all(o in (("error", ""), ("ok", "")) for o in outcomes), outcomes
    assert results[2].outcome == "error" and "Tin" in results[2].error


def test_fuzz_string_length_over_64_bits_is_a_clean_error(tmp_path):
    """Class C: a string variable's first length stored as a 10-byte varint holding more than
    64 bits (struct.error packing it for the checksum); every varint is now at most 64 bits."""
    files, case = _saved_model("mixed")
    shard = "variables/variables.data-00000-of-00001"
    _, entries = _entries(files)
    words = entries[b"words/.ATTRIBUTES/VARIABLE_VALUE"]
    data = bytearray(files[shard])
    data[words.offset:words.offset + 10] = b"\xff" * 9 + b"\x7f"
    results = _run_harness([case({**files, shard: bytes(data)}, ["shard:varint"])], tmp_path)
    assert (results[0].outcome, results[0].key[0]) == ("error", ""), results[0]
    assert "varint exceeds" in results[0].error


def _directory(files, root):
    from tf2ir.tools import fuzz_saved_model as fsm
    return fsm.materialize(str(root / "case"), files, {})


@pytest.mark.parametrize("field", ["slices", "slices-rank", "dim", "size"])
def test_fuzz_checkpoint_entries_tensorflow_cannot_take_are_refused_before_it(field, tmp_path):
    """Classes F and G: on the TensorFlow route, garbage `slices` bytes (TF aborted in a CHECK,
    exit 134), a slice of the wrong rank, a dim of 2**40 (TF tried a 16 TB allocation) and a
    size unlike the shape's are refused by check_before_tensorflow, before TF sees the
    directory; a malformed slice is a plain ConversionError natively, not NeedsTensorFlow."""
    from tf2ir.parser.resources import NeedsTensorFlow
    from tf2ir.parser.saved_model import check_before_tensorflow
    from tf2ir.parser.tensor_bundle import TensorBundle
    files, _ = _saved_model("dense")
    key = b"w/.ATTRIBUTES/VARIABLE_VALUE"
    entry = _entries(files)[1][key]
    if field == "slices":
        entry.slices.append(b"\x0a\x05\xff\xff")
    elif field == "slices-rank":
        entry.slices.append(b"\x0a\x00")              # one extent for a rank-2 tensor
    elif field == "dim":
        entry.shape.dim[0].size = 2 ** 40
    else:
        entry.size += 4
    changed = {k: v for k, v in _entries(files)[1].items()}
    changed[key] = entry
    from tf2ir.tools import fuzz_saved_model as fsm
    table = [(k, changed[k].SerializeToString() if k else v) for k, v in _entries(files)[0]]
    directory = _directory({**files, fsm.INDEX: fsm.write_table(table)}, tmp_path)
    with pytest.raises(ConversionError) as info:
        check_before_tensorflow(directory)
    assert "checkpoint entry 'w/.ATTRIBUTES/VARIABLE_VALUE'" in str(info.value)
    if field.startswith("slices"):
        bundle = TensorBundle(_os.path.join(directory, "variables", "variables"), model="m")
        with pytest.raises(ConversionError) as info:
            bundle.tensor(key.decode())
        assert not isinstance(info.value, NeedsTensorFlow) and "slice" in str(info.value)


def test_fuzz_asset_filename_with_nul_is_refused_before_tensorflow(tmp_path):
    """Class H: an AssetFileDef filename holding a NUL (ValueError in os.path.realpath,
    parser/model_files.py) is one clean refusal before TensorFlow loads the directory."""
    from tf2ir.parser.saved_model import check_before_tensorflow
    from tf2ir.parser.tensor_bundle import bundle_messages
    files, _ = _saved_model("vocab")
    message = bundle_messages()[2].FromString(files["saved_model.pb"])
    assets = message.meta_graphs[0].asset_file_def
    assert assets
    assets[0].filename = "vocab\x00.txt"
    directory = _directory({**files, "saved_model.pb": message.SerializeToString()}, tmp_path)
    with pytest.raises(ConversionError) as info:
        check_before_tensorflow(directory)
    assert "asset file name" in str(info.value) and "\\x00" in str(info.value)


def test_fuzz_manifest_lone_surrogate_is_a_clean_error(tmp_path):
    """Class D: a manifest output, path or input name holding a lone surrogate ("\\ud800",
    valid JSON) was a UnicodeEncodeError in batch; now one clean error, nothing written."""
    cases = [_manifest('[{"path": "a.pb", "output": "x\\ud800.onnx"}]'),
             _manifest('[{"path": "a\\udc80.pb"}]'),
             _manifest('[{"path": "a.pb", "inputs": ["x\\ud800"]}]')]
    results = _run_harness(cases, tmp_path)
    outcomes = [(results[i].outcome, results[i].key[0]) for i in range(len(cases))]
    assert outcomes == [("error", "")] * len(cases), outcomes
    assert all("surrogate" in results[i].error for i in range(len(cases)))


def test_onnx_passes_bound_the_constants_they_compute_from_a_broadcast():
    """Class E: a shift before a Gemm whose input declares 2**40 channels (fold_shift
    broadcast the scalar shift to 2**40 values: MemoryError, a blow-up in the fuzz run), and
    an Add constant varying along the last axis, divided by a per-channel scale sunk into a
    Conv (a C x K constant from C + K values): neither pass computes the big constant."""
    import numpy as np
    from tf2ir.ir.fold_limits import FOLD_LIMIT_BYTES
    from tf2ir.ir.onnx.passes.scale import sink_scales_into_weights
    from tests.ir.onnx.test_pass_common import node, onnx_graph as lowered
    f32 = np.float32
    g = lowered([node("Add", ["x", "t"], ["a"]), node("Gemm", ["a", "w"], ["y"], transB=1)],
                {"t": np.ones((), f32), "w": np.ones((2, 3), f32)},
                {"x": (f32, [1, 2 ** 40])}, {"y": (f32, [1, 2])})
    assert sink_scales_into_weights(g) == 0
    c, k = 2048, 2048
    inits = {"s": np.full((1, c, 1, 1), 2, f32), "t": np.ones((1, 1, 1, k), f32),
             "w": np.ones((1, c, 1, 1), f32)}
    g = lowered([node("Mul", ["x", "s"], ["m"]), node("Add", ["m", "t"], ["a"]),
                 node("Conv", ["a", "w"], ["y"], kernel_shape=[1, 1])], inits,
                {"x": (f32, [1, c, 1, k])}, {"y": (f32, [1, 1, 1, k])})
    sink_scales_into_weights(g)
    assert max(a.nbytes for a in g.initializers.values()) <= FOLD_LIMIT_BYTES
