"""Reproducers of the defect classes the savedmodel and manifest fuzz kinds still found on 2026-11-26
(issue 21), built from the fuzz seeds into the current folder:

    python tests/data/fuzz/make_open_reproducers.py
    TF2IR_SAVED_MODEL_READER=native tf2ir convert A-port-not-int -o a.onnx      # and B-, C-
    tf2ir batch D-manifest/list.json -o D-out -j 1

Each ended in "internal error"; since the fixes each is one clean error line, and each class has its
case in tests/reliability/test_fuzz_regressions.py (A, B: malformed refs and call lists; C: a
varint over 64 bits; D: a lone surrogate in a manifest)."""
import os, shutil, json
from tf2ir.tools import fuzz_saved_model as fsm
from tf2ir.parser.tensor_bundle import bundle_messages
seeds = fsm.build_seeds()
def copy(name, dst):
    shutil.rmtree(dst, ignore_errors=True); shutil.copytree(os.path.join(seeds, name), dst); return dst
def edit_pb(d, fn):
    p = os.path.join(d, "saved_model.pb"); m = bundle_messages()[2].FromString(open(p, "rb").read())
    fn(m.meta_graphs[0].graph_def); open(p, "wb").write(m.SerializeToString())
def call_node(g):
    return next(n for n in g.node if n.op == "StatefulPartitionedCall")
# A: a port that is not a number in an outer-graph input (parser/resources.py parse)
d = copy("dense", "A-port-not-int")
edit_pb(d, lambda g: call_node(g).input.__setitem__(0, call_node(g).input[0].split(":")[0] + ":x"))
# B: a call inside a function whose Tin lists fewer types than it has inputs (resources.py _call)
d = copy("dense", "B-short-Tin")
def extra_inner(g):
    for f in g.library.function:
        for n in f.node_def:
            if n.op in ("StatefulPartitionedCall", "PartitionedCall"):
                del n.attr["Tin"].list.type[-1]; return
edit_pb(d, extra_inner)
# C: a string variable's length varint overflowing 64 bits (tensor_bundle.py _strings)
d = copy("mixed", "C-string-length-overflow")
from tf2ir.tools.fuzz_saved_model import read_table, INDEX
entries = {k: bundle_messages()[1].FromString(v) for k, v in read_table(open(os.path.join(d, INDEX), "rb").read()) if k}
words = entries[b"words/.ATTRIBUTES/VARIABLE_VALUE"]
shard = os.path.join(d, "variables/variables.data-00000-of-00001")
data = bytearray(open(shard, "rb").read()); data[words.offset:words.offset + 10] = b"\xff" * 9 + b"\x7f"
open(shard, "wb").write(data)
# D: a manifest output holding a lone surrogate (tools/batch.py run: os.path.realpath)
os.makedirs("D-manifest", exist_ok=True)
shutil.copy(os.path.join(os.path.dirname(os.path.abspath(fsm.__file__)), "..", "tests", "data", "sample_cnn.pb"), "D-manifest/a.pb")
open("D-manifest/list.json", "w").write('[{"path": "a.pb", "output": "x\\ud800.onnx"}]')
