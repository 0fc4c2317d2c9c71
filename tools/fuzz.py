"""A fuzzing harness for the functions `tf2ir convert`, `tf2ir compile` and `tf2ir batch` call.

    python -m tf2ir.tools.fuzz --seconds 600 [--kind pb|pbtxt|ir|savedmodel|manifest|all]
                               [--seed S] [--jobs J] [--json report.json] [--save DIR]
    python -m tf2ir.tools.fuzz --replay DIR/crash-KeyError-ir_text.py-123.ir

The release check (issue 21): a 30-minute run over every kind, one worker, niced:

    nice -n 10 python -m tf2ir.tools.fuzz --seconds 1800 --kind all --seed 21 -j 1 \\
        --save /tmp/fuzz/release --json /tmp/fuzz/release.json

It prints one row per kind and a total row with the counts of cases and of each outcome
(ok, error, crash, hang, memory, abort, invalid, corrupt, escape), then one line per defect
group with its reproducer; the same numbers are in the JSON (`kinds.KIND.outcomes`,
`total.outcomes`, `groups`). Exit status 0: no defect; 1: some.

Five kinds of mutated input. pb, pbtxt and ir come from one seed corpus (tests/data/
sample_cnn.pb and about 190 small GraphDefs built here with tensorboard's compiled protos,
one or a few nodes each over the op types of docs/ops.md, plus their `--emit ir` files):

  pb     the .pb bytes: bit flips, interesting bytes, truncation, insertion, deletion,
         duplication and splicing of ranges, and edits of the wire structure (varint values,
         length prefixes, field numbers; fields dropped, repeated or moved between messages,
         lengths either kept consistent or broken);
  pbtxt  the parsed GraphDef: op types changed among the known ones, inputs rewired (ports,
         control inputs, cycles, missing names), nodes dropped, duplicated, renamed or
         spliced in from other seeds, attributes changed in kind and value, dtypes, shapes
         with huge, zero or negative dims, Const contents that disagree with their shape,
         functions and calls added; written as .pbtxt text (sometimes edited as text) or as
         a binary .pb;
  ir     the .ir text and its .ir.weights: lines deleted, repeated, swapped or taken from
         other seeds, tokens and numbers replaced, characters inserted, the weights file
         truncated, extended, altered or left out;
  savedmodel  a SavedModel directory (seeds made once with TensorFlow and cached: dense, conv,
         int64/string variables, a constant lookup table, a vocabulary-file table): its
         saved_model.pb mutated as bytes or as a message (graph, string constants such as
         RestoreV2's tensor names, signatures, asset file names with `..`, absolute paths,
         NULs), variables.index mutated as bytes or rewritten as a valid table with edited
         entries (negative and huge dims, dtypes, offsets, sizes, shards, crc32c, slices,
         non-UTF-8 or dropped keys, the header), shard bytes flipped, cut or grown, and files
         replaced by FIFOs, /dev/zero links, links leaving the directory, directories or
         nothing (tools/fuzz_saved_model.py); converted as `tf2ir convert DIR` by the native
         reader (--saved-model-reader auto: TensorFlow's route too, for what it refuses);
  manifest  a `tf2ir batch` manifest (JSON, YAML) in a sandbox, generated with wrong types,
         NULs, huge values, lone surrogates, YAML aliases, tags and merge keys, deep nesting,
         output paths with `..`, absolute paths and a symlinked folder, or a valid one mutated
         as text (tools/fuzz_manifest.py); run as `tf2ir batch MANIFEST -o out -j 1`.

Each case runs in a worker process (fork; one PluginManager per worker; batches of cases per
round trip) under a time limit (SIGALRM in the worker, SIGKILL from the parent at twice the
limit) and an address-space limit (RLIMIT_AS), with written files capped (RLIMIT_FSIZE).
A worker that dies or is killed is replaced; its case is classified. Outcomes:

  ok       converted (or compiled) and the written model passes
           onnx.checker.check_model(full_check=True)
  error    a clean tf2ir.ir.ConversionError (and no output or temporary file left behind)
  crash    any other exception (OSError included; the inputs are the harness's own files),
           grouped by exception type and the innermost tf2ir frame (file:line)
  hang     the case ran past the time limit (grouped by where it was interrupted)
  memory   MemoryError, a resource limit hit, or the worker killed
  abort    the worker died of SIGABRT (a C++ std::terminate, a pybind11 abort)
  invalid  a model was written that the checker rejects, or a file was left behind
           (manifest: a model batch reports ok that the checker rejects)
  corrupt  savedmodel: only checkpoint files were mutated (bytes TensorFlow checksums, or the
           index entries describing them), the conversion succeeded, and the model differs
           from the unmutated seed's conversion: TensorFlow refuses such a directory
           ("Checksum does not match"), tf2ir converted corrupted weights silently
  escape   savedmodel: the model holds the bytes of a canary file outside the SavedModel
           directory; manifest: a job's output or sidecar resolves outside -o (caught before
           it is written), or any file outside -o was created or changed

A manifest model that batch reports as "internal error: ..." is a crash (batch catches it).

One reproducer per defect group (the smallest seen) is saved under --save with a .json
sidecar (a SavedModel or manifest case: a folder NAME.savedmodel/ or NAME.manifest/, its
FIFOs and symlinks listed in NAME.json); `--replay FILE` runs it again in this process and
prints the traceback. No TensorFlow is imported, but to make the SavedModel seeds once.

The mutations are in tools/fuzz_mutate.py; what this harness and its modes share (the corpus,
the exceptions of the defect outcomes, the check of a written model) in tools/fuzz_core.py.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from tf2ir.tools.fuzz_core import (OUTPUT_NAME, BatchInternalError, CaseTimeout, Corpus, Dt,
                                   Escape, Fn, InvalidModel, Shp, SilentCorruption, _attr, _clean,
                                   _dtype_enum, _first_line, check_model_file)
from tf2ir.tools.fuzz_mutate import _IR_TOKEN, mutate_bytes, mutate_graph_def, mutate_ir

KINDS = ("pb", "pbtxt", "ir", "savedmodel", "manifest")
OUTCOMES = ("ok", "error", "crash", "hang", "memory", "abort", "invalid", "corrupt", "escape")
DEFECTS = ("crash", "hang", "memory", "abort", "invalid", "corrupt", "escape")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # the tf2ir package root
SAMPLE_CNN = os.path.join(ROOT, "tests", "data", "sample_cnn.pb")
DEFAULT_TIME_LIMIT = 10.0
DEFAULT_MEMORY_MB = 2048
DEFAULT_FILE_MB = 512
STAGES = ("mutate", "convert", "compile", "check")


# == seed graphs ============================================================================
class GraphBuilder:
    """A small GraphDef under construction, without TensorFlow."""

    def __init__(self, name: str):
        from tensorboard.compat.proto import graph_pb2
        self.name = name
        self.graph = graph_pb2.GraphDef()
        self.graph.versions.producer = 1882
        self._count = 0

    def _name(self, base: str) -> str:
        self._count += 1
        return f"{base}_{self._count}"

    def node(self, op: str, inputs: Sequence[str] = (), name: Optional[str] = None,
             nodes=None, **attrs) -> str:
        target = self.graph.node if nodes is None else nodes
        node = target.add(name=name or self._name(op.lower()), op=op, input=list(inputs))
        for key, value in attrs.items():
            if value is not None:
                _attr(value, node.attr[key])
        return node.name

    def ph(self, dtype: str = "float32", shape=(2, 3), name: Optional[str] = None) -> str:
        return self.node("Placeholder", (), name or self._name("x"), dtype=Dt(dtype),
                         shape=Shp(shape) if shape is not None else None)

    def const(self, value, dtype: Optional[str] = None, name: Optional[str] = None) -> str:
        array = np.asarray(value, dtype=dtype)
        from tf2ir.ir.tensor import dtype_of_numpy
        kind = "string" if array.dtype.kind in "SUO" else dtype_of_numpy(array.dtype)
        return self.node("Const", (), name or self._name("c"), dtype=Dt(kind), value=array)

    def op(self, op: str, *inputs: str, T: Optional[str] = "float32", name: Optional[str] = None,
           **attrs) -> str:
        return self.node(op, inputs, name, **({"T": Dt(T)} if T else {}), **attrs)

    def function(self, name: str, args: Sequence[Tuple[str, str]], results: Sequence[Tuple[str, str]],
                 body: Callable[["GraphBuilder", Any], Dict[str, str]]) -> None:
        """Add a FunctionDef: `body(builder, nodes)` adds nodes (names of args and
        "node:out:0" references as inputs) and returns {result: reference}."""
        fdef = self.graph.library.function.add()
        fdef.signature.name = name
        for arg, dtype in args:
            fdef.signature.input_arg.add(name=arg, type=_dtype_enum(dtype))
        for res, dtype in results:
            fdef.signature.output_arg.add(name=res, type=_dtype_enum(dtype))
        for key, ref in body(self, fdef.node_def).items():
            fdef.ret[key] = ref

    def serialize(self) -> bytes:
        return self.graph.SerializeToString(deterministic=True)


F, I32, I64, BOOL = "float32", "int32", "int64", "bool"
UNARY_FLOAT = (
    "Abs Acos Acosh Asin Asinh Atan Atanh Ceil Cos Cosh Elu Erf Erfc Exp Expm1 Floor Inv "
    "IsFinite IsInf IsNan L2Loss Log Log1p LogSoftmax Neg Reciprocal Relu Relu6 Rint Round "
    "Rsqrt Selu Sigmoid Sign Sin Sinh Softmax Softplus Softsign Sqrt Square Tan Tanh OnesLike "
    "ZerosLike Identity Snapshot StopGradient PreventGradient").split()
BINARY_FLOAT = (
    "Add AddV2 Sub Mul Div RealDiv DivNoNan MulNoNan Maximum Minimum Pow SquaredDifference "
    "FloorDiv FloorMod Mod TruncateDiv TruncateMod Atan2 Xdivy Xlogy Equal NotEqual Greater "
    "GreaterEqual Less LessEqual").split()
BINARY_INT = "BitwiseAnd BitwiseOr BitwiseXor LeftShift RightShift".split()
REDUCTIONS = "Sum Mean Max Min Prod EuclideanNorm".split()


def _rand(*shape, dtype="float32", seed=0):
    rng = np.random.RandomState(seed)
    if dtype == "bool":
        return rng.rand(*shape) < 0.5
    if dtype.startswith("int") or dtype.startswith("uint"):
        return rng.randint(0, 4, size=shape).astype(dtype)
    return rng.randn(*shape).astype(dtype)


def seed_graphs() -> List[Tuple[str, bytes]]:
    """The built seed corpus: (name, serialized GraphDef), a few nodes each, over the op
    types tf2ir maps (docs/ops.md) and its fusions, functions and control flow."""
    seeds: List[GraphBuilder] = []

    def new(name: str) -> GraphBuilder:
        builder = GraphBuilder(name)
        seeds.append(builder)
        return builder

    for op in UNARY_FLOAT:
        b = new(op)
        b.op(op, b.ph(F, (2, 3)))
    for i, op in enumerate(BINARY_FLOAT):
        b = new(op)
        other = b.const(_rand(3, seed=i)) if i % 3 == 2 else b.ph(F, (2, 3))
        b.op(op, b.ph(F, (None, 3)), other)
    b = new("ApproximateEqual")
    b.op("ApproximateEqual", b.ph(F), b.ph(F), tolerance=1e-3)
    for op in BINARY_INT:
        b = new(op)
        b.op(op, b.ph(I32, (2, 3)), b.const(np.array([1, 2, 3], np.int32)), T=I32)
    b = new("Invert")
    b.op("Invert", b.ph(I32, (4,)), T=I32)
    for op in ("LogicalAnd", "LogicalOr"):
        b = new(op)
        b.op(op, b.ph(BOOL, (2, 3)), b.ph(BOOL, (2, 3)), T=None)
    b = new("LogicalNot")
    b.op("LogicalNot", b.ph(BOOL, (3,)), T=None)
    for op in REDUCTIONS:
        b = new(op)
        b.op(op, b.ph(F, (2, 3, 4)), b.const(np.array([1], np.int32)), keep_dims=op == "Mean",
             Tidx=Dt(I32))
    for op in ("All", "Any"):
        b = new(op)
        b.op(op, b.ph(BOOL, (2, 3)), b.const(np.array(1, np.int32)), T=None, keep_dims=False,
             Tidx=Dt(I32))
    for op in ("ArgMax", "ArgMin"):
        b = new(op)
        b.op(op, b.ph(F, (2, 3)), b.const(np.array(1, np.int32)), output_type=Dt(I64), Tidx=Dt(I32))
    for op in ("Cumsum", "Cumprod"):
        b = new(op)
        b.op(op, b.ph(F, (2, 3)), b.const(np.array(1, np.int32)), exclusive=op == "Cumsum",
             reverse=False, Tidx=Dt(I32))
    b = new("Cast")
    b.op("Cast", b.ph(F, (2, 3)), T=None, SrcT=Dt(F), DstT=Dt(I32), Truncate=False)
    for op in ("BiasAdd", "BiasAddV1"):
        b = new(op)
        b.op(op, b.ph(F, (2, 3, 4)), b.const(_rand(4)), data_format="NHWC" if op == "BiasAdd" else None)
    b = new("MatMul")
    b.op("MatMul", b.ph(F, (None, 3)), b.const(_rand(3, 4)), transpose_a=False, transpose_b=False)
    b = new("MatMulT")
    b.op("MatMul", b.ph(F, (4, 3)), b.ph(F, (5, 4)), transpose_a=True, transpose_b=True)
    for op in ("BatchMatMul", "BatchMatMulV2"):
        b = new(op)
        b.op(op, b.ph(F, (2, 2, 3)), b.const(_rand(2, 3, 4)), adj_x=False, adj_y=False)
    b = new("BatchMatMulV3")
    b.op("BatchMatMulV3", b.ph(F, (2, 2, 3)), b.ph(F, (2, 3, 4)), T=None, Ta=Dt(F), Tb=Dt(F),
         Tout=Dt(F), adj_x=False, adj_y=False)
    conv = dict(strides=[1, 1, 1, 1], padding="SAME", data_format="NHWC", dilations=[1, 1, 1, 1])
    b = new("Conv2D")
    b.op("Conv2D", b.ph(F, (None, 5, 5, 2)), b.const(_rand(3, 3, 2, 4)), **conv)
    b = new("Conv2DStrided")
    b.op("Conv2D", b.ph(F, (1, 6, 6, 2)), b.const(_rand(2, 2, 2, 3)), **{
        **conv, "strides": [1, 2, 2, 1], "padding": "VALID"})
    b = new("Conv2DExplicit")
    b.op("Conv2D", b.ph(F, (1, 5, 5, 2)), b.const(_rand(3, 3, 2, 2)), **{
        **conv, "padding": "EXPLICIT", "explicit_paddings": [0, 0, 1, 1, 1, 1, 0, 0]})
    b = new("DepthwiseConv2dNative")
    b.op("DepthwiseConv2dNative", b.ph(F, (1, 5, 5, 2)), b.const(_rand(3, 3, 2, 1)), **conv)
    b = new("Conv3D")
    b.op("Conv3D", b.ph(F, (1, 4, 4, 4, 2)), b.const(_rand(2, 2, 2, 2, 3)),
         strides=[1] * 5, padding="VALID", data_format="NDHWC", dilations=[1] * 5)
    b = new("Conv2DBackpropInput")
    b.op("Conv2DBackpropInput", b.const(np.array([1, 6, 6, 2], np.int32)), b.const(_rand(3, 3, 2, 4)),
         b.ph(F, (1, 3, 3, 4)), **{**conv, "strides": [1, 2, 2, 1]})
    b = new("Conv3DBackpropInputV2")
    b.op("Conv3DBackpropInputV2", b.const(np.array([1, 4, 4, 4, 2], np.int32)),
         b.const(_rand(2, 2, 2, 2, 3)), b.ph(F, (1, 3, 3, 3, 3)), strides=[1] * 5,
         padding="VALID", data_format="NDHWC", dilations=[1] * 5, Tshape=Dt(I32))
    pool = dict(ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID", data_format="NHWC")
    for op in ("MaxPool", "AvgPool"):
        b = new(op)
        b.op(op, b.ph(F, (None, 4, 4, 3)), **pool)
    b = new("MaxPoolSame")
    b.op("MaxPool", b.ph(F, (1, 5, 5, 1)), **{**pool, "ksize": [1, 3, 3, 1], "padding": "SAME"})
    b = new("MaxPoolV2")
    b.op("MaxPoolV2", b.ph(F, (1, 4, 4, 3)), b.const(np.array([1, 2, 2, 1], np.int32)),
         b.const(np.array([1, 2, 2, 1], np.int32)), padding="VALID", data_format="NHWC")
    for op in ("MaxPool3D", "AvgPool3D"):
        b = new(op)
        b.op(op, b.ph(F, (1, 4, 4, 4, 2)), ksize=[1, 2, 2, 2, 1], strides=[1, 2, 2, 2, 1],
             padding="VALID", data_format="NDHWC")
    for op in ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"):
        b = new(op)
        params = [b.const(_rand(2, seed=k) ** 2 + 0.5) for k in range(4)]
        b.op(op, b.ph(F, (1, 3, 3, 2)), *params, epsilon=1e-3, is_training=False,
             data_format="NHWC", **({"U": Dt(F)} if op != "FusedBatchNorm" else {}))
    b = new("LRN")
    b.op("LRN", b.ph(F, (1, 3, 3, 4)), depth_radius=2, bias=1.0, alpha=1e-4, beta=0.75)

    b = new("Reshape")
    b.op("Reshape", b.ph(F, (2, 3)), b.const(np.array([3, -1], np.int32)), Tshape=Dt(I32))
    b = new("ExpandDims")
    b.op("ExpandDims", b.ph(F, (2, 3)), b.const(np.array(1, np.int32)), Tdim=Dt(I32))
    b = new("Squeeze")
    b.op("Squeeze", b.ph(F, (2, 1, 3)), squeeze_dims=[1])
    b = new("Transpose")
    b.op("Transpose", b.ph(F, (2, 3, 4)), b.const(np.array([2, 0, 1], np.int32)), Tperm=Dt(I32))
    b = new("ConcatV2")
    b.op("ConcatV2", b.ph(F, (2, 3)), b.ph(F, (2, 3)), b.const(np.array(1, np.int32)), N=2,
         Tidx=Dt(I32))
    b = new("Concat")
    b.op("Concat", b.const(np.array(0, np.int32)), b.ph(F, (2, 3)), b.ph(F, (1, 3)), N=2)
    b = new("Pack")
    b.op("Pack", b.ph(F, (2, 3)), b.ph(F, (2, 3)), N=2, axis=0)
    b = new("Unpack")
    b.op("Unpack", b.ph(F, (2, 3)), num=3, axis=1)
    b = new("Split")
    b.op("Split", b.const(np.array(1, np.int32)), b.ph(F, (2, 4)), num_split=2)
    b = new("SplitV")
    b.op("SplitV", b.ph(F, (2, 5)), b.const(np.array([2, 3], np.int64)), b.const(np.array(1, np.int32)),
         num_split=2, Tlen=Dt(I64))
    b = new("Tile")
    b.op("Tile", b.ph(F, (2, 3)), b.const(np.array([2, 1], np.int32)), Tmultiples=Dt(I32))
    b = new("Fill")
    b.op("Add", b.op("Fill", b.const(np.array([2, 3], np.int32)), b.const(np.float32(1.5)),
                     index_type=Dt(I32)), b.ph(F, (2, 3)))
    b = new("Range")
    b.op("Range", b.const(np.int32(0)), b.ph(I32, ()), b.const(np.int32(2)), T=None, Tidx=Dt(I32))
    b = new("RangeFolded")
    r = b.op("Range", b.const(np.float32(0)), b.const(np.float32(3)), b.const(np.float32(0.5)),
             T=None, Tidx=Dt(F))
    b.op("Mul", r, b.ph(F, (6,)))
    b = new("LinSpace")
    b.op("Mul", b.op("LinSpace", b.const(np.float32(0)), b.const(np.float32(1)),
                     b.const(np.int32(3)), Tidx=Dt(I32)), b.ph(F, (3,)))
    b = new("BroadcastTo")
    b.op("BroadcastTo", b.ph(F, (3,)), b.const(np.array([2, 3], np.int32)), Tidx=Dt(I32))
    paddings = np.array([[1, 1], [0, 2]], np.int32)
    b = new("Pad")
    b.op("Pad", b.ph(F, (2, 3)), b.const(paddings), Tpaddings=Dt(I32))
    b = new("PadV2")
    b.op("PadV2", b.ph(F, (2, 3)), b.const(paddings), b.const(np.float32(1)), Tpaddings=Dt(I32))
    b = new("MirrorPad")
    b.op("MirrorPad", b.ph(F, (3, 4)), b.const(np.array([[1, 1], [1, 0]], np.int32)),
         mode="REFLECT", Tpaddings=Dt(I32))
    b = new("Slice")
    b.op("Slice", b.ph(F, (3, 4)), b.const(np.array([1, 0], np.int32)),
         b.const(np.array([2, -1], np.int32)), Index=Dt(I32))
    b = new("StridedSlice")
    b.op("StridedSlice", b.ph(F, (4, 5, 6)), b.const(np.array([1, 0, 0], np.int32)),
         b.const(np.array([3, 5, 6], np.int32)), b.const(np.array([1, 2, 1], np.int32)),
         Index=Dt(I32), begin_mask=0, end_mask=2, ellipsis_mask=0, new_axis_mask=0,
         shrink_axis_mask=0)
    b = new("StridedSliceMasks")
    b.op("StridedSlice", b.ph(F, (4, 5, 6)), b.const(np.array([0, 1], np.int32)),
         b.const(np.array([0, 2], np.int32)), b.const(np.array([1, 1], np.int32)),
         Index=Dt(I32), begin_mask=0, end_mask=0, ellipsis_mask=1, new_axis_mask=0,
         shrink_axis_mask=2)
    b = new("ReverseV2")
    b.op("ReverseV2", b.ph(F, (2, 3)), b.const(np.array([1], np.int32)), Tidx=Dt(I32))
    b = new("ReverseSequence")
    b.op("ReverseSequence", b.ph(F, (2, 4, 3)), b.const(np.array([2, 3], np.int64)),
         seq_dim=1, batch_dim=0, Tlen=Dt(I64))
    b = new("GatherV2")
    b.op("GatherV2", b.ph(F, (4, 3)), b.const(np.array([0, 2, 3], np.int32)),
         b.const(np.array(0, np.int32)), Tparams=Dt(F), Tindices=Dt(I32), Taxis=Dt(I32),
         batch_dims=0, T=None)
    b = new("GatherNd")
    b.op("GatherNd", b.ph(F, (3, 4)), b.const(np.array([[0, 1], [2, 3]], np.int32)),
         Tparams=Dt(F), Tindices=Dt(I32), T=None)
    b = new("OneHot")
    b.op("OneHot", b.ph(I32, (3,)), b.const(np.int32(4)), b.const(np.float32(1)),
         b.const(np.float32(0)), axis=-1, TI=Dt(I32))
    b = new("ScatterNd")
    b.op("ScatterNd", b.const(np.array([[0], [2]], np.int32)), b.ph(F, (2, 3)),
         b.const(np.array([4, 3], np.int32)), Tindices=Dt(I32))
    for op in ("TensorScatterAdd", "TensorScatterUpdate"):
        b = new(op)
        b.op(op, b.ph(F, (4, 3)), b.const(np.array([[0], [2]], np.int32)), b.ph(F, (2, 3)),
             Tindices=Dt(I32))
    for op in ("Select", "SelectV2"):
        b = new(op)
        b.op(op, b.ph(BOOL, (2, 3)), b.ph(F, (2, 3)), b.ph(F, (2, 3)))
    b = new("Where")
    b.op("Where", b.ph(BOOL, (2, 3)), T=BOOL)
    b = new("ClipByValue")
    b.op("ClipByValue", b.ph(F, (2, 3)), b.const(np.float32(-1)), b.const(np.float32(1)))
    b = new("TopKV2")
    b.op("TopKV2", b.ph(F, (2, 5)), b.const(np.int32(2)), sorted=True, Tk=Dt(I32))
    b = new("Unique")
    b.op("Unique", b.ph(F, (6,)), out_idx=Dt(I32))
    b = new("InvertPermutation")
    b.op("InvertPermutation", b.ph(I32, (4,)), T=I32)
    for op in ("Shape", "Size"):
        b = new(op)
        b.op(op, b.ph(F, (None, 3)), out_type=Dt(I32))
    b = new("Rank")
    b.op("Rank", b.ph(F, (2, 3)))
    b = new("ShapeN")
    b.op("ShapeN", b.ph(F, (2, 3)), b.ph(F, (4,)), N=2, out_type=Dt(I64))
    b = new("IdentityN")
    b.node("IdentityN", [b.ph(F, (2, 3)), b.ph(I32, (2,))], T=[Dt(F), Dt(I32)])
    b = new("MatrixBandPart")
    b.op("MatrixBandPart", b.ph(F, (3, 3)), b.const(np.int64(1)), b.const(np.int64(0)),
         Tindex=Dt(I64))
    b = new("MatrixDiag")
    b.op("MatrixDiag", b.ph(F, (2, 3)))
    b = new("MatrixDiagV3")
    b.op("MatrixDiagV3", b.ph(F, (2, 3)), b.const(np.int32(0)), b.const(np.int32(-1)),
         b.const(np.int32(-1)), b.const(np.float32(0)), align="RIGHT_LEFT")
    for op in ("DepthToSpace", "SpaceToDepth"):
        b = new(op)
        b.op(op, b.ph(F, (1, 2, 2, 4) if op == "DepthToSpace" else (1, 4, 4, 1)), block_size=2,
             data_format="NHWC")
    b = new("SpaceToBatchND")
    b.op("SpaceToBatchND", b.ph(F, (1, 4, 4, 1)), b.const(np.array([2, 2], np.int32)),
         b.const(np.array([[0, 0], [0, 0]], np.int32)), Tblock_shape=Dt(I32), Tpaddings=Dt(I32))
    b = new("BatchToSpaceND")
    b.op("BatchToSpaceND", b.ph(F, (4, 2, 2, 1)), b.const(np.array([2, 2], np.int32)),
         b.const(np.array([[0, 0], [0, 0]], np.int32)), Tblock_shape=Dt(I32), Tcrops=Dt(I32))
    for op in ("ResizeBilinear", "ResizeNearestNeighbor", "ResizeBicubic"):
        b = new(op)
        b.op(op, b.ph(F, (1, 3, 3, 2)), b.const(np.array([6, 5], np.int32)), align_corners=False,
             half_pixel_centers=op != "ResizeBicubic")
    for version in (3, 4, 5):
        b = new(f"NonMaxSuppressionV{version}")
        extra = {4: dict(pad_to_max_output_size=False), 5: dict(pad_to_max_output_size=False)}
        inputs = [b.ph(F, (5, 4)), b.ph(F, (5,)), b.const(np.int32(3)), b.const(np.float32(0.5)),
                  b.const(np.float32(0.0))] + ([b.const(np.float32(0.0))] if version == 5 else [])
        b.op(f"NonMaxSuppressionV{version}", *inputs, **extra.get(version, {}))
    b = new("Einsum")
    b.op("Einsum", b.ph(F, (2, 3)), b.ph(F, (3, 4)), equation="ij,jk->ik", N=2)
    b = new("AddN")
    b.op("AddN", b.ph(F, (2, 3)), b.ph(F, (2, 3)), b.const(_rand(2, 3)), N=3)
    b = new("PlaceholderWithDefault")
    b.op("Relu", b.node("PlaceholderWithDefault", [b.const(_rand(2, 3))], dtype=Dt(F),
                        shape=Shp((2, 3))))
    b = new("BoostedTreesBucketize")
    b.node("BoostedTreesBucketize", [b.ph(F, (4,)), b.const(np.array([0.0, 1.0], np.float32))],
           num_features=1)
    b = new("CheckNumerics")
    b.op("Relu", b.op("CheckNumerics", b.ph(F, (2, 3)), message="bad"))
    b = new("EnsureShape")
    b.op("Relu", b.op("EnsureShape", b.ph(F, (None, 3)), shape=Shp((2, 3))))

    # -- several nodes: a dense layer, folding, fusions ---------------------------------------
    b = new("Dense")
    h = b.op("BiasAdd", b.op("MatMul", b.ph(F, (None, 4)), b.const(_rand(4, 3))), b.const(_rand(3)))
    b.op("Softmax", b.op("Relu", h))
    b = new("FoldChain")
    t = b.op("Tile", b.op("Fill", b.const(np.array([2, 2], np.int32)), b.const(np.float32(0.5))),
             b.const(np.array([1, 3], np.int32)))
    b.op("AddV2", b.op("Reshape", t, b.const(np.array([2, 6], np.int32))), b.ph(F, (2, 6)))
    b = new("ShapeArith")
    x = b.ph(F, (None, 4))
    n = b.op("StridedSlice", b.op("Shape", x, out_type=Dt(I32)), b.const(np.array([0], np.int32)),
             b.const(np.array([1], np.int32)), b.const(np.array([1], np.int32)), T=I32,
             Index=Dt(I32), shrink_axis_mask=1)
    shape = b.op("Pack", n, b.const(np.int32(2)), b.const(np.int32(2)), T=I32, N=3, axis=0)
    b.op("Reshape", x, shape, Tshape=Dt(I32))
    b = new("GeluErf")
    x = b.ph(F, (2, 8))
    erf = b.op("Erf", b.op("RealDiv", x, b.const(np.float32(1.4142135))))
    one = b.op("AddV2", erf, b.const(np.float32(1.0)))
    b.op("Mul", b.op("Mul", x, b.const(np.float32(0.5))), one)
    b = new("GeluTanh")
    x = b.ph(F, (2, 8))
    cube = b.op("Mul", b.const(np.float32(0.044715)), b.op("Pow", x, b.const(np.float32(3)),
                                                            name="gelu/Pow"), name="gelu/mul")
    inner = b.op("AddV2", x, cube, name="gelu/add")
    th = b.op("Tanh", b.op("Mul", b.const(np.float32(0.7978846)), inner, name="gelu/mul_1"),
              name="gelu/Tanh")
    one = b.op("AddV2", b.const(np.float32(1.0)), th, name="gelu/add_1")
    half = b.op("Mul", b.const(np.float32(0.5)), x, name="gelu/mul_2")
    b.op("Mul", half, one, name="gelu/mul_3")
    b = new("Swish")
    x = b.ph(F, (2, 8))
    b.op("Mul", x, b.op("Sigmoid", x))
    b = new("HardSwish")
    x = b.ph(F, (2, 8))
    r6 = b.op("Relu6", b.op("AddV2", x, b.const(np.float32(3.0))))
    b.op("Mul", x, b.op("Mul", r6, b.const(np.float32(1.0 / 6.0))))
    b = new("LayerNorm")
    x = b.ph(F, (2, 3, 8))
    s = "layer_normalization/moments"
    axes = b.const(np.array([-1], np.int32), name=f"{s}/reduction_indices")
    mean = b.op("Mean", x, axes, name=f"{s}/mean", keep_dims=True, Tidx=Dt(I32))
    stop = b.op("StopGradient", mean, name=f"{s}/StopGradient")
    sq = b.op("SquaredDifference", x, stop, name=f"{s}/SquaredDifference")
    var = b.op("Mean", sq, axes, name=f"{s}/variance", keep_dims=True, Tidx=Dt(I32))
    s = "layer_normalization/batchnorm"
    eps = b.op("AddV2", var, b.const(np.float32(1e-3), name=f"{s}/add/y"), name=f"{s}/add")
    rs = b.op("Rsqrt", eps, name=f"{s}/Rsqrt")
    mul = b.op("Mul", rs, b.const(_rand(8) + 1, name=f"{s}/gamma"), name=f"{s}/mul")
    xm = b.op("Mul", x, mul, name=f"{s}/mul_1")
    mm = b.op("Mul", mean, mul, name=f"{s}/mul_2")
    sub = b.op("Sub", b.const(_rand(8), name=f"{s}/beta"), mm, name=f"{s}/sub")
    b.op("AddV2", xm, sub, name=f"{s}/add_1")

    # -- functions and control flow -----------------------------------------------------------
    def neg_body(builder, nodes):
        builder.op("Neg", "arg", name="n", nodes=nodes)
        return {"out": "n:y:0"}

    def abs_body(builder, nodes):
        builder.op("Abs", "arg", name="a", nodes=nodes)
        return {"out": "a:y:0"}

    for op in ("PartitionedCall", "StatefulPartitionedCall"):
        b = new(op)
        b.function("neg_fn", [("arg", F)], [("out", F)], neg_body)
        call = b.node(op, [b.ph(F, (2, 3))], Tin=[Dt(F)], Tout=[Dt(F)], f=Fn("neg_fn"))
        b.op("Relu", call)
    for op in ("If", "StatelessIf"):
        b = new(op)
        b.function("then_fn", [("arg", F)], [("out", F)], neg_body)
        b.function("else_fn", [("arg", F)], [("out", F)], abs_body)
        b.node(op, [b.ph(BOOL, ()), b.ph(F, (2, 3))], Tcond=Dt(BOOL), Tin=[Dt(F)], Tout=[Dt(F)],
               then_branch=Fn("then_fn"), else_branch=Fn("else_fn"), output_shapes=[Shp((2, 3))])

    def cond_body(builder, nodes):
        builder.op("Less", "i", builder.node("Const", (), "limit", nodes, dtype=Dt(I32),
                                              value=np.array(3, np.int32)), T=I32, name="less",
                   nodes=nodes)
        return {"ok": "less:z:0"}

    def loop_body(builder, nodes):
        one = builder.node("Const", (), "one", nodes, dtype=Dt(I32), value=np.array(1, np.int32))
        builder.op("AddV2", "i", f"{one}:output:0", T=I32, name="next", nodes=nodes)
        builder.op("Mul", "x", "x", name="sq", nodes=nodes)
        return {"i_out": "next:z:0", "x_out": "sq:z:0"}

    for op in ("While", "StatelessWhile"):
        b = new(op)
        b.function("cond_fn", [("i", I32), ("x", F)], [("ok", BOOL)], cond_body)
        b.function("body_fn", [("i", I32), ("x", F)], [("i_out", I32), ("x_out", F)], loop_body)
        b.node(op, [b.const(np.int32(0)), b.ph(F, (2, 3))], T=[Dt(I32), Dt(F)], cond=Fn("cond_fn"),
               body=Fn("body_fn"), output_shapes=[Shp(()), Shp((2, 3))], parallel_iterations=10)
    return [(b.name, b.serialize()) for b in seeds]


# == the corpus =============================================================================
CONVERTER_OPS = ("Const", "Placeholder", "Identity", "NoOp", "CheckNumerics", "EnsureShape",
                 "PreventGradient", "Snapshot", "StopGradient", "PlaceholderWithDefault")


def build_corpus(manager=None, extra: Sequence[str] = (), kinds: Sequence[str] = KINDS) -> Corpus:
    """The seed corpus: sample_cnn.pb, the built seed graphs, files in `extra` (.pb/.pbtxt
    paths or directories of them), the IR of each that converts and, when `kinds` has
    savedmodel, the seed SavedModels (tools/fuzz_saved_model.py, made with TensorFlow)."""
    from google.protobuf import text_format
    from tensorboard.compat.proto import graph_pb2

    from tf2ir.ir.text import save
    from tf2ir.parser.pipeline import Pipeline
    graphs = []
    if os.path.exists(SAMPLE_CNN):
        with open(SAMPLE_CNN, "rb") as f:
            graphs.append(("sample_cnn", f.read()))
    graphs.extend(seed_graphs())
    for path in _expand(extra):
        with open(path, "rb") as f:
            data = f.read()
        if path.endswith(".pbtxt"):
            graph_def = graph_pb2.GraphDef()
            text_format.Parse(data.decode("utf-8"), graph_def)
            data = graph_def.SerializeToString(deterministic=True)
        graphs.append((os.path.basename(path), data))
    pipeline = Pipeline(manager)
    irs = []
    with tempfile.TemporaryDirectory(prefix="tf2ir-fuzz-") as tmp:
        path = os.path.join(tmp, "seed.ir")
        _warm_up(pipeline, graphs[0][1], tmp)
        for name, data in graphs:
            graph_def = graph_pb2.GraphDef()
            graph_def.ParseFromString(data)
            try:
                graph, _ = pipeline.convert_graph_def(graph_def, name)
                save(graph, path)
            except Exception:   # a seed that does not convert gives no IR seed
                continue
            with open(path, encoding="utf-8") as f:
                text = f.read()
            with open(path + ".weights", "rb") as f:
                irs.append((name, text, f.read()))
    op_types = sorted(set(pipeline.manager.registry) | set(CONVERTER_OPS))
    tokens, lines = set(), set()
    for _, text, _ in irs:
        for line in text.split("\n"):
            lines.add(line)
            tokens.update(m.group() for m in _IR_TOKEN.finditer(line))
    saved_models = []
    if "savedmodel" in kinds:
        from tf2ir.tools.fuzz_saved_model import load_seeds
        saved_models = load_seeds()
    return Corpus(graphs, irs, op_types, sorted(tokens), sorted(lines), saved_models)


def _warm_up(pipeline, data: bytes, tmp: str) -> None:
    """Convert, compile and check one seed here, so that the modules a case needs are
    imported before workers fork: every worker runs the code as it was at start."""
    import importlib
    for module in ("tf2ir.ir.infer", "tf2ir.ir.text"):   # what compile cases need
        importlib.import_module(module)
    path = os.path.join(tmp, "warm.pb")
    with open(path, "wb") as f:
        f.write(data)
    try:
        graph, _ = pipeline.convert_file(path)
        pipeline.compile(graph, os.path.join(tmp, "warm.onnx"))
        check_model_file(os.path.join(tmp, "warm.onnx"))
    except Exception:
        pass


def _expand(paths: Sequence[str]) -> List[str]:
    found = []
    for path in paths:
        if os.path.isdir(path):
            found.extend(os.path.join(path, n) for n in sorted(os.listdir(path))
                         if n.endswith((".pb", ".pbtxt")))
        else:
            found.append(path)
    return found


# == cases ==================================================================================
@dataclass
class Case:
    """One input: its kind, its files (suffix → bytes, the first is the model), and how it
    was made (index under the run's seed, the seed corpus entry, the mutations)."""

    kind: str
    index: int
    files: Dict[str, bytes]
    origin: str = ""
    mutations: List[str] = field(default_factory=list)
    special: Dict[str, str] = field(default_factory=dict)   # path key → fifo, devzero, link:…

    @property
    def size(self) -> int:
        return sum(len(v) for v in self.files.values())


def case_rng(seed: int, kind: str, index: int) -> random.Random:
    return random.Random(f"{seed}:{kind}:{index}")


def make_case(corpus: Corpus, kind: str, index: int, seed: int = 0) -> Case:
    """The `index`th case of `kind` under `seed`: the same bytes on every call."""
    rng = case_rng(seed, kind, index)
    if kind == "pb":
        name, data = rng.choice(corpus.graphs)
        ops: List[str] = []
        data = mutate_bytes(data, rng, corpus, ops)
        return Case(kind, index, {".pb": data}, name, ops)
    if kind == "pbtxt":
        name, data = rng.choice(corpus.graphs)
        ops = []
        files = mutate_graph_def(data, rng, corpus, ops)
        return Case(kind, index, files, name, ops)
    if kind == "ir":
        name, text, weights = rng.choice(corpus.irs)
        ops = []
        files = mutate_ir(text, weights, rng, corpus, ops)
        return Case(kind, index, files, name, ops)
    if kind == "savedmodel":
        from tf2ir.tools.fuzz_saved_model import PREFIX, mutate_saved_model
        if not corpus.saved_models:
            raise RuntimeError("no SavedModel seeds (TensorFlow is needed to make them once)")
        name, seed_files = rng.choice(corpus.saved_models)
        ops = []
        files, special = mutate_saved_model(seed_files, rng, corpus, ops)
        files = {PREFIX + k: v for k, v in files.items()}
        return Case(kind, index, files, name, ops, {PREFIX + k: v for k, v in special.items()})
    if kind == "manifest":
        from tf2ir.tools.fuzz_manifest import make_manifest_case
        ops = []
        files, special, origin = make_manifest_case(corpus, rng, ops)
        return Case(kind, index, files, origin, ops, special)
    raise ValueError(f"unknown kind {kind!r}")


# == running one case =======================================================================
FUZZ_MAX_TENSOR_BYTES = 256 << 20


class Context:
    """What a worker keeps between cases: one Pipeline (one PluginManager), a work folder,
    and the shared slot where it posts the running case's stage."""

    def __init__(self, workdir: str, manager=None, slot=None):
        from tf2ir.parser.pipeline import Options, Pipeline
        # Compact constants may expand to --max-tensor-bytes (1 GiB by default); a fuzz worker
        # has a 2 GB address-space budget, so it converts with a smaller documented limit.
        self.pipeline = Pipeline(manager, Options(max_tensor_bytes=FUZZ_MAX_TENSOR_BYTES))
        self.workdir = workdir
        self.slot = slot
        self.corpus: Optional[Corpus] = None           # the worker's corpus (seeds for baselines)
        self.saved_model_reader = "native"             # TF2IR_SAVED_MODEL_READER for savedmodel

    def stage(self, index: int) -> None:
        if self.slot is not None:
            self.slot[2] = index


def execute_case(case: Case, ctx: Context) -> None:
    """What `tf2ir convert` (.pb, .pbtxt) or `tf2ir compile` (.ir) does with the case's
    files, in process; then the written model is checked. A SavedModel case runs as
    `tf2ir convert DIR` (tools/fuzz_saved_model.py), a manifest case as `tf2ir batch`
    (tools/fuzz_manifest.py)."""
    if case.kind == "savedmodel":
        from tf2ir.tools.fuzz_saved_model import execute_saved_model
        return execute_saved_model(case, ctx)
    if case.kind == "manifest":
        from tf2ir.tools.fuzz_manifest import execute_manifest
        return execute_manifest(case, ctx)
    base = os.path.join(ctx.workdir, "case")
    for suffix, data in case.files.items():
        with open(base + suffix, "wb") as f:
            f.write(data)
    model = base + next(iter(case.files))
    out = os.path.join(ctx.workdir, OUTPUT_NAME)
    ctx.stage(1)
    if model.endswith(".ir"):
        from tf2ir.ir.infer import infer_graph
        from tf2ir.ir.text import load
        graph = load(model)
        infer_graph(graph, model=model)
    else:
        graph, _ = ctx.pipeline.convert_file(model)
    ctx.stage(2)
    ctx.pipeline.compile(graph, out, model=model)
    ctx.stage(3)
    check_model_file(out)


@dataclass
class Result:
    kind: str
    index: int
    outcome: str
    seconds: float
    size: int = 0
    key: Tuple[str, str] = ("", "")          # defects: (exception type or class, where)
    detail: Optional[Dict[str, Any]] = None  # defects: message, frame, function, traceback
    error: Optional[str] = None              # clean errors: the message, normalized
    multiline: bool = False                  # clean errors: str(error) is not one line


_ALARM: Dict[str, Any] = {"fired": False, "stack": None}


def _on_alarm(signum, frame):
    _ALARM["fired"] = True
    _ALARM["stack"] = traceback.extract_stack(frame)
    raise CaseTimeout()


def normalize(message: str, limit: int = 90) -> str:
    """A message with names, numbers and paths blanked, for grouping."""
    message = _first_line(message, 400)
    message = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", message)
    message = re.sub(r"/[^\s,:]+", "PATH", message)
    message = re.sub(r"(?<![\w.])-?\d+(\.\d+)?(e[-+]?\d+)?\b", "N", message)
    return message[:limit]


# The harness's own files (its frames are not tf2ir's; the modes' frames are)
_HARNESS = tuple(os.path.join("tools", n) for n in ("fuzz.py", "fuzz_core.py", "fuzz_mutate.py"))
_HARNESS_FILES = tuple(os.path.join(ROOT, n) for n in _HARNESS)
_OUTSIDE = tuple(os.path.join(ROOT, d) + os.sep for d in (".venv", "tests", "build", ".git"))


def tf2ir_frame(frames) -> Tuple[str, str]:
    """The innermost frame in tf2ir's own code: ("parser/attrs.py:57", function)."""
    for frame in reversed(list(frames)):
        if frame.filename.startswith("<"):   # <string>, <frozen ...>: generated code
            continue
        path = os.path.abspath(frame.filename)
        rel = None
        if path.startswith(ROOT + os.sep) and not path.startswith(_OUTSIDE) and \
                path not in _HARNESS_FILES:
            rel = os.path.relpath(path, ROOT)
        elif f"{os.sep}site-packages{os.sep}tf2ir{os.sep}" in path and \
                not path.endswith(_HARNESS):
            rel = path.split(f"{os.sep}site-packages{os.sep}tf2ir{os.sep}", 1)[1]
        if rel is not None:
            return f"{rel}:{frame.lineno}", frame.name
    return "(outside tf2ir)", ""


def _describe(exc: BaseException, frames=None, full: bool = False) -> Dict[str, Any]:
    frames = traceback.extract_tb(exc.__traceback__) if frames is None else frames
    where, function = tf2ir_frame(frames)
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    if not full and len(text) > 6000:
        text = "…\n" + text[-6000:]
    return {"type": type(exc).__name__, "message": _first_line(str(exc)), "frame": where,
            "function": function, "traceback": text}


def run_case(case: Case, execute: Callable, ctx: Context, time_limit: Optional[float],
             full_traceback: bool = False) -> Result:
    """Run one case under the time limit and classify what happened."""
    import errno

    from tf2ir.ir.errors import ConversionError
    start = time.perf_counter()
    _ALARM.update(fired=False, stack=None)
    outcome, exc_seen = "ok", None
    try:
        if time_limit:
            signal.setitimer(signal.ITIMER_REAL, time_limit)
        try:
            execute(case, ctx)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except CaseTimeout as exc:
        outcome, exc_seen = "hang", exc
    except InvalidModel as exc:
        outcome, exc_seen = "invalid", exc
    except SilentCorruption as exc:
        outcome, exc_seen = "corrupt", exc
    except Escape as exc:
        outcome, exc_seen = "escape", exc
    except ConversionError as exc:
        outcome, exc_seen = "error", exc
    except MemoryError as exc:
        outcome, exc_seen = "memory", exc
    except OSError as exc:
        limited = exc.errno in (errno.EFBIG, errno.ENOSPC, errno.ENOMEM)
        outcome, exc_seen = ("memory" if limited else "crash"), exc
    except BaseException as exc:   # noqa: B036 - SystemExit and KeyboardInterrupt are crashes too
        outcome, exc_seen = "crash", exc
    seconds = time.perf_counter() - start
    result = Result(case.kind, case.index, outcome, seconds, case.size)
    if _ALARM["fired"]:   # the timeout may have been caught and turned into something else
        result.outcome = "hang"
        frames = _ALARM["stack"] or []
        detail = _describe(exc_seen or CaseTimeout(), frames, full_traceback)
        detail.update(type="timeout", message=f"still running after {time_limit:g} s")
        detail["traceback"] = "".join(traceback.format_list(frames[-25:]))
        result.key, result.detail = ("timeout", detail["frame"]), detail
        return result
    leftovers = _leftovers(case, ctx, outcome == "ok")
    if leftovers and outcome in ("ok", "error"):
        what = "an error" if outcome == "error" else "success"
        result.outcome = "invalid"
        result.detail = {"type": "leftover", "message": f"{', '.join(leftovers)} left behind after "
                         f"{what}", "frame": "", "function": "", "traceback": ""}
        result.key = ("leftover", f"after {what}: {', '.join(sorted(set(_suffix(n) for n in leftovers)))}")
        return result
    if outcome == "error":
        result.error = normalize(getattr(exc_seen, "message", str(exc_seen)))
        result.multiline = len(str(exc_seen).splitlines()) > 1   # the CLI prints one line
        if full_traceback:   # a replay shows the text itself
            result.error = str(exc_seen)
    elif outcome in ("invalid", "corrupt", "escape"):
        message = str(exc_seen)
        kind = {"invalid": "checker", "corrupt": "silent corruption", "escape": "escape"}[outcome]
        result.detail = {"type": kind, "message": message, "frame": "", "function": "",
                         "traceback": ""}
        result.key = (kind, normalize(message, 120))
    elif isinstance(exc_seen, BatchInternalError):
        result.detail = {"type": f"batch internal error {exc_seen.kind}",
                         "message": _first_line(str(exc_seen)), "frame": "tools/batch.py",
                         "function": "convert_one", "traceback": ""}
        result.key = (result.detail["type"], normalize(str(exc_seen).split(":", 2)[-1], 60))
    elif outcome != "ok":
        detail = _describe(exc_seen, full=full_traceback)
        if isinstance(exc_seen, OSError) and outcome == "memory":
            detail["type"] = f"OSError({errno.errorcode.get(exc_seen.errno, exc_seen.errno)})"
        result.key, result.detail = (detail["type"], detail["frame"]), detail
    return result


def _suffix(name: str) -> str:
    return re.sub(r"^[^.]*", "*", name)


def _leftovers(case: Case, ctx: Context, success: bool) -> List[str]:
    try:
        names = os.listdir(ctx.workdir)
    except OSError:
        return []
    expected = {("case" + s).split("/")[0] for s in case.files} | {"stderr.log"}
    expected |= {("case" + s).split("/")[0] for s in case.special}
    if case.kind == "savedmodel":
        expected.add("canary.txt")
    if success:
        expected.add(OUTPUT_NAME)
    return sorted(n for n in names if n not in expected)


def _address_space() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def apply_limits(memory_mb: Optional[int], file_mb: Optional[int]) -> None:
    """RLIMIT_AS: the process's address space now plus `memory_mb` (a worker forked from a
    large parent still gets the same room); RLIMIT_FSIZE: `file_mb` per written file."""
    import resource
    if memory_mb:
        limit = _address_space() + (int(memory_mb) << 20)
        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    if file_mb:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # a write past the limit: EFBIG
        limit = int(file_mb) << 20
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))


# == workers ================================================================================
@dataclass
class Config:
    seed: int = 0
    time_limit: Optional[float] = DEFAULT_TIME_LIMIT
    memory_mb: Optional[int] = DEFAULT_MEMORY_MB
    file_mb: Optional[int] = DEFAULT_FILE_MB
    recycle: int = 20000            # a worker is replaced after this many cases
    saved_model_reader: str = "native"   # savedmodel cases: TF2IR_SAVED_MODEL_READER (or auto)
    kill_after: Optional[float] = None   # SIGKILL a case after this long (None: 2 × limit + 5)


def _worker_main(conn, slot, config: Config, corpus, execute, make, workdir) -> None:
    """A worker: receive batches of (kind, index), send one Result per case."""
    try:   # die with the parent
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except Exception:
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGALRM, _on_alarm)
    log = os.open(os.path.join(workdir, "stderr.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    import faulthandler   # a fatal signal, or SIGUSR1 from the parent before it kills, logs the stack
    faulthandler.enable(sys.stderr)
    faulthandler.register(signal.SIGUSR1, sys.stderr, all_threads=False)
    import logging
    logging.disable(logging.CRITICAL)
    import warnings
    warnings.simplefilter("ignore")
    if config.saved_model_reader == "auto":   # TensorFlow's import is not a case's time or memory
        try:
            from tf2ir.parser.frozen import import_tensorflow
            import_tensorflow()
        except Exception:
            pass
    apply_limits(config.memory_mb, config.file_mb)
    ctx = Context(workdir, slot=slot)
    ctx.corpus, ctx.saved_model_reader = corpus, config.saved_model_reader
    done = 0
    while True:
        try:
            batch = conn.recv()
        except (EOFError, OSError):
            break
        if batch is None:
            break
        os.ftruncate(log, 0)
        os.lseek(log, 0, os.SEEK_SET)
        for kind, index in batch:
            slot[2] = 0
            slot[1] = time.monotonic()
            slot[0] = 1
            try:
                case = make(corpus, kind, index, config.seed)
            except Exception as exc:   # a bug of the harness itself
                result = Result(kind, index, "crash", 0.0, key=("harness", type(exc).__name__),
                                detail={**_describe(exc), "frame": "tools/fuzz.py"})
            else:
                result = run_case(case, execute, ctx, config.time_limit)
            _clean(workdir)
            slot[0] = 0
            conn.send(result)
            done += 1
            if result.outcome in ("hang", "memory") or done >= config.recycle:
                conn.close()
                os._exit(0)   # a fresh worker takes the rest of the batch
    conn.close()
    os._exit(0)


def _faulthandler_frames(text: str) -> List[traceback.FrameSummary]:
    """The last stack faulthandler logged (most recent call first) → frames, outermost first."""
    start = max(text.rfind("Current thread"), text.rfind("Fatal Python error"))
    found = re.findall(r'File "([^"]+)", line (\d+) in (\S+)', text[max(start, 0):])
    return [traceback.FrameSummary(path, int(line), name) for path, line, name in reversed(found)]


class _Worker:
    def __init__(self, ctx, config, corpus, execute, make, root: str, number: int):
        self.workdir = tempfile.mkdtemp(prefix=f"w{number}-", dir=root)
        self.slot = ctx.RawArray("d", 3)   # busy, start (monotonic), stage
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, daemon=True,
                                args=(child, self.slot, config, corpus, execute, make, self.workdir))
        self.proc.start()
        child.close()
        self.pending: deque = deque()
        self.killed_for_time = False

    def stderr_tail(self) -> str:
        try:
            with open(os.path.join(self.workdir, "stderr.log"), "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 4000))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except (OSError, ValueError):
            pass
        self.proc.join(2)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()
        import shutil
        shutil.rmtree(self.workdir, ignore_errors=True)


# == the run ================================================================================
@dataclass
class KindStats:
    cases: int = 0
    seconds: float = 0.0
    outcomes: Counter = field(default_factory=Counter)
    errors: Counter = field(default_factory=Counter)
    multiline: Counter = field(default_factory=Counter)   # multi-line error texts (examples)


@dataclass
class Group:
    outcome: str
    key: Tuple[str, str]
    detail: Dict[str, Any]
    count: int = 0
    kinds: Counter = field(default_factory=Counter)
    size: int = -1
    reproducer: Optional[str] = None
    case: Tuple[str, int] = ("", 0)

    def as_json(self) -> Dict[str, Any]:
        return {"outcome": self.outcome, "type": self.key[0], "where": self.key[1],
                "count": self.count, "kinds": dict(self.kinds), "message": self.detail.get("message"),
                "frame": self.detail.get("frame"), "function": self.detail.get("function"),
                "reproducer": self.reproducer, "case": list(self.case), "size": self.size}


class Fuzzer:
    """Runs cases in `jobs` worker processes and collects outcomes and defect groups."""

    def __init__(self, kinds: Sequence[str] = KINDS, seed: int = 0, jobs: int = 1,
                 config: Optional[Config] = None, save_dir: Optional[str] = None,
                 corpus: Optional[Corpus] = None, execute: Callable = execute_case,
                 make: Callable = make_case, progress: Optional[Callable[[str], None]] = None,
                 batch_seconds: float = 0.25):
        import multiprocessing
        self.kinds = list(kinds)
        self.seed = seed
        self.jobs = max(1, int(jobs))
        self.config = config or Config()
        self.config.seed = seed
        self.save_dir = save_dir
        self.execute, self.make = execute, make
        if corpus is None and make is make_case:
            corpus = build_corpus()
        self.corpus = corpus
        self.progress = progress
        self.batch_seconds = batch_seconds
        self.stats = {k: KindStats() for k in self.kinds}
        self.groups: Dict[Tuple[str, str, str], Group] = {}
        self.mp = multiprocessing.get_context("fork")
        self.wall = 0.0
        self.worker_deaths = 0
        self._mean = 0.01

    # -- scheduling ------------------------------------------------------------------------
    def run(self, seconds: Optional[float] = None, cases: Optional[int] = None) -> "Fuzzer":
        """Run for `seconds`, or `cases` cases of each kind (then the same cases every run)."""
        if seconds is None and cases is None:
            raise ValueError("give seconds or cases")
        if self.save_dir:
            os.makedirs(self.save_dir, exist_ok=True)
        start = time.monotonic()
        deadline = start + seconds if seconds is not None else None
        tasks = self._tasks(cases)
        retry: deque = deque()
        root = tempfile.mkdtemp(prefix="tf2ir-fuzz-", dir="/dev/shm" if os.path.isdir("/dev/shm")
                                and os.access("/dev/shm", os.W_OK) else None)
        workers: List[Optional[_Worker]] = [None] * self.jobs
        number = 0
        exhausted = False
        last_progress = start
        try:
            while True:
                now = time.monotonic()
                open_ = not exhausted and (deadline is None or now < deadline)
                for i in range(self.jobs):
                    w = workers[i]
                    wants = retry or open_
                    if w is None or not w.proc.is_alive() and not w.conn.poll():
                        if w is not None:
                            self._dead(w, retry)
                            workers[i] = w = None
                        if not wants:
                            continue
                        number += 1
                        w = workers[i] = _Worker(self.mp, self.config, self.corpus, self.execute,
                                                 self.make, root, number)
                    size = max(1, min(64, int(self.batch_seconds / max(self._mean, 1e-4))))
                    while len(w.pending) < 2 * size and (retry or open_):
                        batch = [retry.popleft() for _ in range(min(size, len(retry)))]
                        while len(batch) < size and open_ and not retry:
                            task = next(tasks, None)
                            if task is None:
                                exhausted, open_ = True, False
                                break
                            batch.append(task)
                        if not batch:
                            break
                        try:
                            w.conn.send(batch)
                        except (OSError, ValueError):
                            retry.extendleft(reversed(batch))
                            break
                        w.pending.extend(batch)
                live = [w for w in workers if w is not None]
                if not live:
                    break
                if all(not w.pending for w in live) and not retry and not open_:
                    break
                from multiprocessing.connection import wait
                wait([w.conn for w in live] + [w.proc.sentinel for w in live], timeout=0.2)
                for i, w in enumerate(workers):
                    if w is None:
                        continue
                    self._drain(w)
                    if w.slot[0] == 1 and self.config.time_limit and \
                            time.monotonic() - w.slot[1] > self._hard_limit():
                        w.killed_for_time = True
                        os.kill(w.proc.pid, signal.SIGUSR1)   # faulthandler: where it is stuck
                        time.sleep(0.3)
                        w.proc.kill()
                        w.proc.join()
                    if not w.proc.is_alive():
                        self._drain(w)
                        self._dead(w, retry)
                        workers[i] = None
                if self.progress and time.monotonic() - last_progress >= 10:
                    last_progress = time.monotonic()
                    self.progress(self._progress_line(last_progress - start))
        except KeyboardInterrupt:
            if self.progress:
                self.progress("interrupted; reporting what ran")
        finally:
            for w in workers:
                if w is not None:
                    self._drain(w)
                    w.stop()
            import shutil
            shutil.rmtree(root, ignore_errors=True)
            self.wall += time.monotonic() - start
        return self

    def _hard_limit(self) -> float:
        if self.config.kill_after:
            return self.config.kill_after
        return 2 * (self.config.time_limit or 0) + 5

    def _tasks(self, cases: Optional[int]):
        index = 0
        while cases is None or index < cases:
            for kind in self.kinds:
                yield kind, index
            index += 1

    def _drain(self, w: _Worker) -> None:
        while True:
            try:
                if not w.conn.poll():
                    return
                result = w.conn.recv()
            except (EOFError, OSError):
                return
            if w.pending and w.pending[0] == (result.kind, result.index):
                w.pending.popleft()
            self.record(result)

    def _dead(self, w: _Worker, retry: deque) -> None:
        """A worker ended: the case it was running (if any) is classified, the rest retried."""
        w.proc.join()
        code = w.proc.exitcode
        if w.pending and (w.slot[0] == 1 or w.killed_for_time or code != 0):
            kind, index = w.pending.popleft()
            self.worker_deaths += 1
            stage = STAGES[int(w.slot[2])] if 0 <= int(w.slot[2]) < len(STAGES) else "?"
            tail = w.stderr_tail()
            seconds = time.monotonic() - w.slot[1] if w.slot[0] == 1 else 0.0
            result = Result(kind, index, "crash", seconds)
            where, function = tf2ir_frame(_faulthandler_frames(tail))
            where = f"stage {stage}" if where.startswith("(") else where
            if w.killed_for_time:
                result.outcome, result.key = "hang", ("killed", where)
                message = f"killed after {seconds:.0f} s in stage {stage} (SIGALRM did not stop it)"
            else:
                name = signal.Signals(-code).name if code is not None and code < 0 else f"exit {code}"
                oom = code == -signal.SIGKILL or re.search(r"bad_alloc|MemoryError|Cannot allocate|"
                                                           r"out of memory", tail)
                if oom:
                    result.outcome = "memory"
                elif code == -signal.SIGABRT:
                    result.outcome = "abort"
                elif stage == "check":
                    result.outcome = "invalid"
                result.key = (f"worker {name}", where)
                message = f"worker died ({name}) in stage {stage}"
            result.detail = {"type": result.key[0], "message": message, "frame": where,
                             "function": function, "traceback": tail[-3000:]}
            self.record(result)
        retry.extendleft(reversed(w.pending))
        w.pending.clear()
        w.stop()

    # -- results ---------------------------------------------------------------------------
    def record(self, result: Result) -> None:
        stats = self.stats.setdefault(result.kind, KindStats())
        stats.cases += 1
        stats.seconds += result.seconds
        stats.outcomes[result.outcome] += 1
        self._mean = 0.98 * self._mean + 0.02 * result.seconds
        if result.error:
            stats.errors[result.error] += 1
            if result.multiline:
                stats.multiline[result.error] += 1
        if result.outcome not in DEFECTS:
            return
        key = (result.outcome,) + tuple(result.key)
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = Group(result.outcome, tuple(result.key), result.detail or {})
        group.count += 1
        group.kinds[result.kind] += 1
        if self.save_dir and (group.size < 0 or 0 < result.size < group.size or not result.size):
            if result.size or group.size < 0:
                self._save(group, result)

    def _save(self, group: Group, result: Result) -> None:
        try:
            case = self.make(self.corpus, result.kind, result.index, self.seed)
        except Exception:
            return
        slug = re.sub(r"[^A-Za-z0-9_.]+", "-", "-".join((group.outcome,) + group.key)).strip("-")
        import hashlib
        digest = hashlib.sha1(repr((group.outcome,) + group.key).encode()).hexdigest()[:6]
        base = os.path.join(self.save_dir, f"{slug[:80]}-{digest}")
        group.reproducer = save_case(case, base)
        group.size, group.case = case.size, (case.kind, case.index)
        group.detail = result.detail or group.detail
        sidecar = {**group.as_json(), "seed": self.seed, "origin": case.origin,
                   "mutations": case.mutations, "kind": case.kind, "special": case.special, "traceback": group.detail.get("traceback", ""),
                   "replay": f"python -m tf2ir.tools.fuzz --replay {group.reproducer}"}
        with open(base + ".json", "w", encoding="utf-8") as f:
            json.dump(sidecar, f, indent=2)

    # -- reporting -------------------------------------------------------------------------
    def defects(self) -> int:
        return sum(s.outcomes[o] for s in self.stats.values() for o in DEFECTS)

    def _progress_line(self, elapsed: float) -> str:
        total = sum(s.cases for s in self.stats.values())
        counts = Counter()
        for s in self.stats.values():
            counts.update(s.outcomes)
        parts = " ".join(f"{o} {counts[o]}" for o in OUTCOMES if counts[o])
        return f"{elapsed:7.0f} s  {total} cases ({total / max(elapsed, 1e-9):.0f}/s)  {parts}  " \
               f"groups {len(self.groups)}"

    def report(self) -> Dict[str, Any]:
        kinds = {}
        total = KindStats()
        for kind, s in self.stats.items():
            kinds[kind] = {"cases": s.cases, "case_seconds": round(s.seconds, 3),
                           "cases_per_second": round(s.cases / s.seconds, 1) if s.seconds else None,
                           "outcomes": {o: s.outcomes[o] for o in OUTCOMES},
                           "top_errors": s.errors.most_common(12),
                           "multiline_errors": sum(s.multiline.values()),
                           "multiline_examples": s.multiline.most_common(5)}
            total.cases += s.cases
            total.seconds += s.seconds
            total.outcomes.update(s.outcomes)
        groups = sorted(self.groups.values(), key=lambda g: (DEFECTS.index(g.outcome), -g.count))
        return {"seed": self.seed, "jobs": self.jobs, "wall_seconds": round(self.wall, 1),
                "time_limit": self.config.time_limit, "memory_mb": self.config.memory_mb,
                "file_mb": self.config.file_mb, "save_dir": self.save_dir,
                "cases_per_second_wall": round(total.cases / self.wall, 1) if self.wall else None,
                "kinds": kinds,
                "total": {"cases": total.cases, "outcomes": {o: total.outcomes[o] for o in OUTCOMES}},
                "worker_deaths": self.worker_deaths,
                "groups": [g.as_json() for g in groups]}


def format_report(report: Dict[str, Any], errors: int = 0) -> str:
    lines = [f"{'kind':<10} {'cases':>8} {'case s':>8} {'cases/s':>8} "
             + " ".join(f"{o:>7}" for o in OUTCOMES)]
    for kind, k in report["kinds"].items():
        lines.append(f"{kind:<10} {k['cases']:>8} {k['case_seconds']:>8.1f} "
                     f"{k['cases_per_second'] or 0:>8.1f} "
                     + " ".join(f"{k['outcomes'][o]:>7}" for o in OUTCOMES))
    t = report["total"]
    lines.append(f"{'total':<10} {t['cases']:>8} {report['wall_seconds']:>8.1f} "
                 f"{report['cases_per_second_wall'] or 0:>8.1f} "
                 + " ".join(f"{t['outcomes'][o]:>7}" for o in OUTCOMES)
                 + f"   (wall, {report['jobs']} job{'s' if report['jobs'] > 1 else ''})")
    for kind, k in report["kinds"].items():
        if k.get("multiline_errors"):
            lines.append(f"{kind}: {k['multiline_errors']} clean errors whose text is not one line, "
                         f"e.g. {k['multiline_examples'][0][0]}")
    if errors:
        for kind, k in report["kinds"].items():
            lines.append(f"most common clean errors, {kind}:")
            lines.extend(f"  {n:>7}  {m}" for m, n in k["top_errors"][:errors])
    groups = report["groups"]
    lines.append(f"{len(groups)} defect group{'s' if len(groups) != 1 else ''}")
    for g in groups:
        kinds = ",".join(sorted(g["kinds"]))
        lines.append(f"  {g['outcome']:<7} {g['type']} at {g['where']}"
                     f"{' (' + g['function'] + ')' if g['function'] else ''}  ×{g['count']} [{kinds}]")
        lines.append(f"          {g['message']}")
        if g["reproducer"]:
            lines.append(f"          {g['reproducer']}")
    return "\n".join(lines)


# == replay =================================================================================
TREES = (".savedmodel", ".manifest")   # the kinds whose case is a folder


def save_case(case: Case, base: str) -> str:
    """Write a case's files as `base` + suffix (a folder `base.savedmodel/` or
    `base.manifest/` for those kinds, with its special entries in `base.json`); the path
    to replay."""
    import shutil
    for suffix in (".pb", ".pbtxt", ".ir", ".ir.weights") + TREES:
        path = base + suffix
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.remove(path)
    for suffix, data in case.files.items():
        os.makedirs(os.path.dirname(base + suffix) or ".", exist_ok=True)
        with open(base + suffix, "wb") as f:
            f.write(data)
    first = next(iter(case.files))
    if case.kind in ("savedmodel", "manifest"):
        if not os.path.exists(base + ".json"):
            with open(base + ".json", "w", encoding="utf-8") as f:
                json.dump({"kind": case.kind, "origin": case.origin, "mutations": case.mutations,
                           "special": case.special}, f, indent=2)
        return base + first.split("/")[0]
    return base + first


def load_case(path: str) -> Case:
    """A saved reproducer (.pb, .pbtxt, .ir with .ir.weights beside it, a .savedmodel or
    .manifest folder with its .json beside it, or the .json)."""
    path = path.rstrip(os.sep)
    if path.endswith(".json"):
        base = path[:-5]
        path = next((base + s for s in (".pb", ".pbtxt", ".ir") + TREES if os.path.exists(base + s)),
                    path)
    if path.endswith(TREES):
        base, suffix = os.path.splitext(path)
        files = {}
        for dirpath, dirnames, names in os.walk(path):
            dirnames.sort()
            for n in sorted(names):
                full = os.path.join(dirpath, n)
                if os.path.isfile(full) and not os.path.islink(full):
                    with open(full, "rb") as f:
                        files[suffix + "/" + os.path.relpath(full, path)] = f.read()
        sidecar = {}
        if os.path.exists(base + ".json"):
            with open(base + ".json", encoding="utf-8") as f:
                sidecar = json.load(f)
        if suffix == ".manifest":   # the manifest is the first file
            first = [k for k in files if os.path.basename(k).startswith("list.")]
            files = {k: files[k] for k in first + [k for k in files if k not in first]}
        elif ".savedmodel/saved_model.pb" in files:
            files = {".savedmodel/saved_model.pb": files.pop(".savedmodel/saved_model.pb"), **files}
        kind = "savedmodel" if suffix == ".savedmodel" else "manifest"
        return Case(kind, 0, files, origin=sidecar.get("origin", path),
                    mutations=sidecar.get("mutations", []), special=sidecar.get("special", {}))
    if path.endswith(".ir.weights"):
        path = path[:-len(".weights")]
    suffix = ".ir" if path.endswith(".ir") else ".pbtxt" if path.endswith(".pbtxt") else ".pb"
    files = {}
    with open(path, "rb") as f:
        files[suffix] = f.read()
    if suffix == ".ir" and os.path.exists(path + ".weights"):
        with open(path + ".weights", "rb") as f:
            files[".ir.weights"] = f.read()
    kind = {".ir": "ir", ".pbtxt": "pbtxt", ".pb": "pb"}[suffix]
    return Case(kind, 0, files, origin=path)


def replay(paths: Sequence[str], config: Config) -> int:
    """Run saved cases in this process (time and memory limits applied); print each outcome
    with its traceback. Exit status 1 when any is a defect."""
    signal.signal(signal.SIGALRM, _on_alarm)
    apply_limits(config.memory_mb, config.file_mb)
    status = 0
    with tempfile.TemporaryDirectory(prefix="tf2ir-replay-") as workdir:
        ctx = Context(workdir)
        ctx.saved_model_reader = config.saved_model_reader
        for path in paths:
            case = load_case(path)
            result = run_case(case, execute_case, ctx, config.time_limit, full_traceback=True)
            _clean(workdir)
            print(f"{path}: {result.outcome} ({result.seconds:.2f} s)")
            if result.detail:
                d = result.detail
                print(f"  {d['type']} at {d['frame']} {d['function']}: {d['message']}")
                if d.get("traceback"):
                    print("  " + d["traceback"].rstrip().replace("\n", "\n  "))
            elif result.error:
                print(f"  clean error: {result.error}")
            if result.outcome in DEFECTS:
                status = 1
    return status


# == command line ===========================================================================
def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tf2ir.tools.fuzz",
        description="Fuzz tf2ir's convert, compile and batch with mutated .pb, .pbtxt and .ir "
                    "files, SavedModel directories (savedmodel) and batch manifests (manifest).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="""outcomes counted per kind (the report's columns):
  ok, error      converted, or a clean one-line ConversionError (not defects)
  crash          any other exception; for manifests also batch's "internal error"
  hang           past --time-limit;  memory: MemoryError or a resource limit
  abort          the worker died of SIGABRT (C++ terminate)
  invalid        a model written with success that onnx.checker rejects, or a file left
  corrupt        savedmodel: a checkpoint mutation TensorFlow's checksums refuse converted
                 to a model unlike the seed's (silent corruption)
  escape         savedmodel: a file outside the directory read into the model;
                 manifest: a file written (or about to be) outside -o

the 30-minute release run (every kind, one worker):
  nice -n 10 python -m tf2ir.tools.fuzz --seconds 1800 --kind all --seed 21 -j 1 \\
      --save /tmp/fuzz/release --json /tmp/fuzz/release.json

Exit status: 0 no defect, 1 defects found (any outcome but ok and error), 2 usage.""")
    parser.add_argument("--seconds", type=float, help="run this long (wall clock)")
    parser.add_argument("--cases", type=int, help="or run this many cases of each kind")
    parser.add_argument("--kind", default="all",
                        help="pb, pbtxt, ir, savedmodel, manifest, all, or a comma-separated list "
                             "(default all)")
    parser.add_argument("--seed", type=int, default=0, help="run seed (cases are reproducible)")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--json", metavar="FILE", help="write the report as JSON")
    parser.add_argument("--save", metavar="DIR",
                        help="reproducers, one per defect group (default /tmp/fuzz/seed<SEED>)")
    parser.add_argument("--time-limit", type=float, default=DEFAULT_TIME_LIMIT,
                        help=f"seconds per case (default {DEFAULT_TIME_LIMIT:g})")
    parser.add_argument("--memory-mb", type=int, default=DEFAULT_MEMORY_MB,
                        help=f"address-space limit of a worker (default {DEFAULT_MEMORY_MB})")
    parser.add_argument("--file-mb", type=int, default=DEFAULT_FILE_MB,
                        help=f"largest file a case may write (default {DEFAULT_FILE_MB})")
    parser.add_argument("--corpus", action="append", default=[], metavar="PATH",
                        help="more seed graphs (.pb/.pbtxt files or folders of them)")
    parser.add_argument("--saved-model-reader", choices=("native", "auto"), default="native",
                        help="savedmodel cases: the native reader only (default), or auto: "
                             "TensorFlow freezes what it refuses, as `tf2ir convert` does "
                             "(TensorFlow is imported in each worker before its first case)")
    parser.add_argument("--errors", type=int, default=0, metavar="N",
                        help="also list the N most common clean errors per kind")
    parser.add_argument("--replay", nargs="+", metavar="FILE",
                        help="run saved reproducers in this process and print tracebacks")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)
    config = Config(args.seed, args.time_limit or None, args.memory_mb or None, args.file_mb or None,
                    saved_model_reader=args.saved_model_reader)
    if args.replay:
        return replay(args.replay, config)
    if args.seconds is None and args.cases is None:
        parser.error("give --seconds N or --cases N (or --replay FILE)")
    kinds = list(KINDS) if args.kind == "all" else [k.strip() for k in args.kind.split(",")]
    for kind in kinds:
        if kind not in KINDS:
            parser.error(f"unknown --kind {kind!r}; choose from {', '.join(KINDS)} or all")
    save = args.save or os.path.join(tempfile.gettempdir(), "fuzz", f"seed{args.seed}")
    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    from tf2ir.plugins.manager import PluginManager
    corpus = build_corpus(PluginManager(), args.corpus, kinds)
    if "savedmodel" in kinds and not corpus.saved_models:
        parser.error("--kind savedmodel needs its seed SavedModels, which are made once with "
                     "TensorFlow (not importable here)")
    if progress:
        progress(f"corpus: {len(corpus.graphs)} graphs, {len(corpus.irs)} IR files, "
                 f"{len(corpus.saved_models)} SavedModels; "
                 f"kinds {','.join(kinds)}, seed {args.seed}, {args.jobs} job(s); reproducers in {save}")
    fuzzer = Fuzzer(kinds, args.seed, args.jobs, config, save, corpus, progress=progress)
    fuzzer.run(seconds=args.seconds, cases=args.cases)
    report = fuzzer.report()
    print(format_report(report, args.errors))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)
    return 1 if fuzzer.defects() else 0


if __name__ == "__main__":
    # `python -m` runs this file as __main__, beside no tf2ir.tools.fuzz: the exception
    # classes run_case catches come from tf2ir.tools.fuzz_core, as the modes' do
    sys.exit(main())
