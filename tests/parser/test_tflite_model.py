"""The TFLite flatbuffer reader (parser/tflite_model.py) and the graph view's checks
(parser/tflite_view.py) on a small real model and on hostile mutations of it: every malformed
model is one ConversionError naming the model, never another exception, a hang or a huge
allocation. Mutations are made structurally through the schema's object API (LiteRT's
schema_py_generated) and re-serialized, or by writing bytes at a field's offset."""

from __future__ import annotations

import os
import struct
import time

import numpy as np
import pytest

from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.parser.tflite_model import is_tflite_file, parse_tflite, read_tflite
from tf2ir.parser.tflite_view import TfLiteGraph, read_tflite_view, tflite_view_of

tf = pytest.importorskip("tensorflow")
schema = pytest.importorskip("ai_edge_litert.schema_py_generated")


def _conv_add(x):
    w = np.random.default_rng(1).standard_normal((3, 3, 3, 4)).astype(np.float32)
    y = tf.nn.relu6(tf.nn.conv2d(x, w, 1, "SAME") + 1.0)
    return tf.reduce_mean(y, axis=[1, 2])


@pytest.fixture(scope="session")
def models():
    """{mode: .tflite bytes} of a tiny conv + add + mean model, float and full int8."""
    from tests.conformance.tflite_harness import spec, to_tflite
    specs = [spec([None, 8, 8, 3], name="x")]
    return {mode: to_tflite(_conv_add, specs, mode, io="int8" if mode == "int8" else "float")
            for mode in ("float", "int8")}


def unpack(data: bytes):
    return schema.ModelT.InitFromPackedBuf(bytearray(data), 0)


def pack(model) -> bytes:
    import flatbuffers
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def _weights(model):
    """The conv filter tensor (4-D, with data) of an unpacked model."""
    return next(t for t in model.subgraphs[0].tensors if t.shape is not None and len(t.shape) == 4
                and model.buffers[t.buffer].data is not None)


def refused(data: bytes, *words: str) -> str:
    """The one-line error reading (and viewing every subgraph of) `data` gives."""
    with pytest.raises(ConversionError) as info:
        model = parse_tflite(data, "m.tflite")
        for index in range(len(model.subgraphs)):
            TfLiteGraph(model, index)
    text = str(info.value)
    assert "\n" not in text and "m.tflite" in text
    for word in words:
        assert word in text, text
    return text


# -- what a good model reads as ----------------------------------------------------------------
def test_reads_tensors_shapes_and_buffers_as_views(models):
    data = models["float"]
    model = parse_tflite(data, "m.tflite")
    sg = model.subgraphs[0]
    x = sg.tensors[sg.inputs[0]]
    assert x.dtype == "float32" and x.shape == (None, 8, 8, 3)   # -1 in shape_signature
    assert [op.op_type for op in sg.operators] == ["CONV_2D", "MEAN"]
    conv = sg.operators[0]
    assert conv.options["padding"] == "SAME"
    assert conv.options["fused_activation_function"] == "RELU6"
    weights = [t for t in sg.tensors if t.data is not None and t.data.ndim == 4]
    assert len(weights) == 1 and weights[0].data.shape == (4, 3, 3, 3)   # OHWI
    assert np.shares_memory(weights[0].data, np.frombuffer(data, np.uint8))   # no copy
    assert model.data is data


def test_reads_quantization(models):
    sg = parse_tflite(models["int8"], "m.tflite").subgraphs[0]
    x = sg.tensors[sg.inputs[0]]
    assert x.dtype == "int8" and x.quantization is not None
    assert x.quantization.scale.dtype == np.float32 and x.quantization.scale.size == 1
    per_channel = [t for t in sg.tensors if t.quantization is not None and t.quantization.per_channel]
    assert per_channel and per_channel[0].quantization.zero_point.size == 4


def test_is_tflite_file_by_identifier(tmp_path, models):
    path = tmp_path / "model.bin"
    path.write_bytes(models["float"])
    assert is_tflite_file(str(path))
    path.write_bytes(b"\x00" * 16)
    assert not is_tflite_file(str(path))


def test_signatures_choose_the_subgraph(models):
    model = unpack(models["float"])
    sig = schema.SignatureDefT()
    sig.signatureKey, sig.subgraphIndex = "serving_default", 0
    entry = schema.TensorMapT()
    entry.name, entry.tensorIndex = "x", model.subgraphs[0].inputs[0]
    sig.inputs, sig.outputs = [entry], []
    model.signatureDefs = [sig]
    read = parse_tflite(pack(model), "m.tflite")
    assert read.signatures[0].key == "serving_default" and read.signatures[0].inputs == {"x": 0}
    assert tflite_view_of(read).subgraph.index == 0
    with pytest.raises(ConversionError) as info:
        tflite_view_of(read, "other")
    assert info.value.exit_code == ExitStatus.USAGE and "serving_default" in str(info.value)


# -- hostile models: one error each --------------------------------------------------------
def test_truncated_and_foreign_bytes(models):
    data = models["float"]
    for cut in (0, 7, 64, len(data) // 2, len(data) - 1):
        refused(data[:cut])
    refused(b"\x00\x00\x00\x00XXXX" + data[8:], "TFL3")


def test_operator_input_tensor_out_of_range(models):
    model = unpack(models["float"])
    model.subgraphs[0].operators[0].inputs[0] = 999
    refused(pack(model), "tensor 999", "does not exist")


def test_subgraph_output_out_of_range(models):
    model = unpack(models["float"])
    model.subgraphs[0].outputs = [-5]
    refused(pack(model), "tensor -5")


def test_opcode_index_out_of_range(models):
    model = unpack(models["float"])
    model.subgraphs[0].operators[1].opcodeIndex = 77
    refused(pack(model), "opcode index 77")


def test_unknown_builtin_code(models):
    model = unpack(models["float"])
    for code in model.operatorCodes:
        code.builtinCode = 4000
    refused(pack(model), "unknown TFLite builtin operator code 4000")


def test_tensor_buffer_out_of_range(models):
    model = unpack(models["float"])
    model.subgraphs[0].tensors[1].buffer = 10_000
    refused(pack(model), "buffer 10000 does not exist")


def test_buffer_offset_past_the_end(models):
    model = unpack(models["float"])
    sg = model.subgraphs[0]
    weights = _weights(model)
    buf = model.buffers[weights.buffer]
    buf.data, buf.offset, buf.size = None, 1 << 40, 432
    refused(pack(model), "past the end of the file")
    buf.offset, buf.size = 64, (1 << 62)   # an offset inside, a size past it (no overflow)
    refused(pack(model), "past the end of the file")


def test_buffer_size_against_shape(models):
    model = unpack(models["float"])
    weights = _weights(model)
    weights.shape = [1 << 16, 1 << 16, 1 << 16, 1 << 16]   # 2**64 values: 0 in int64
    refused(pack(model), "needs")


def test_signature_subgraph_out_of_range(models):
    model = unpack(models["float"])
    sig = schema.SignatureDefT()
    sig.signatureKey, sig.subgraphIndex, sig.inputs, sig.outputs = "serving_default", 3, [], []
    model.signatureDefs = [sig]
    refused(pack(model), "subgraph 3")


def test_signature_tensor_out_of_range(models):
    model = unpack(models["float"])
    sig = schema.SignatureDefT()
    entry = schema.TensorMapT()
    entry.name, entry.tensorIndex = "x", 4096
    sig.signatureKey, sig.subgraphIndex, sig.inputs, sig.outputs = "s", 0, [entry], []
    model.signatureDefs = [sig]
    refused(pack(model), "tensor 4096")


def test_no_subgraphs(models):
    model = unpack(models["float"])
    model.subgraphs = []
    refused(pack(model), "no subgraphs")


def test_string_buffer_with_a_huge_count(models):
    model = unpack(models["float"])
    sg = model.subgraphs[0]
    t = next(t for t in sg.tensors if t.buffer and model.buffers[t.buffer].data is not None)
    t.type, t.shape = schema.TensorType.STRING, [2]
    model.buffers[t.buffer].data = list(struct.pack("<iii", 0x7FFFFFFF, 12, 12))
    refused(pack(model), "bad count")


def test_operators_out_of_order(models):
    model = unpack(models["float"])
    sg = model.subgraphs[0]
    sg.operators.reverse()   # MEAN now reads CONV_2D's output before CONV_2D runs
    refused(pack(model), "before any operator computes it", "MEAN")


def test_a_huge_variable_is_refused_before_it_is_allocated(models):
    """A variable tensor (no buffer: it starts at zeros) of a crafted shape read by an
    operator: refused under the limit on materialised tensors, not allocated."""
    model = unpack(models["float"])
    w = _weights(model)
    w.buffer, w.isVariable, w.shape = 0, True, [1 << 20, 1 << 20, 3, 3]
    refused(pack(model), "variable", "more than the limit")


def test_operator_reading_its_own_output(models):
    model = unpack(models["float"])
    op = model.subgraphs[0].operators[0]
    op.inputs[0] = op.outputs[0]
    refused(pack(model), "before any operator computes it")


def test_huge_vector_length_fails_fast(models):
    data = bytearray(models["float"])
    root = parse_tflite(bytes(data), "m")   # a good read first
    assert root.subgraphs
    import tflite
    sg = tflite.Model.GetRootAs(data, 0).Subgraphs(0)
    start = sg._tab.Vector(sg._tab.Offset(4))       # the tensors vector's first element
    struct.pack_into("<I", data, start - 4, 0x7FFFFFFF)   # its length
    began = time.perf_counter()
    refused(bytes(data))
    assert time.perf_counter() - began < 5


def test_subgraph_cycle_is_refused(models):
    view = TfLiteGraph(parse_tflite(models["float"], "m.tflite"))
    view.bind(object())   # a pipeline is never reached: the cycle is refused first
    with pytest.raises(ConversionError, match="subgraph 0 calls itself"):
        view.convert_subgraph(0, [])
    with pytest.raises(ConversionError, match="subgraph 5 does not exist"):
        view.convert_subgraph(5, [])


# -- files that are not models -------------------------------------------------------------
def test_fifo_and_directory_are_refused(tmp_path):
    fifo = tmp_path / "pipe.tflite"
    os.mkfifo(fifo)
    began = time.perf_counter()
    with pytest.raises(ConversionError, match="not a regular file"):
        read_tflite(str(fifo))
    assert time.perf_counter() - began < 5
    with pytest.raises(ConversionError, match="does not exist|cannot read"):
        read_tflite_view(str(tmp_path / "missing.tflite"))


def test_random_mutations_give_one_error(models):
    """A seeded sweep of byte mutations (the reader and every subgraph's view): each model
    reads or is one ConversionError."""
    import random
    rng = random.Random(26)
    seeds = [models["float"], models["int8"]]
    for _ in range(300):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 6)):
            i = rng.randrange(len(data))
            data[i] = rng.randrange(256) if rng.random() < 0.7 else data[i] ^ (1 << rng.randrange(8))
        try:
            model = parse_tflite(bytes(data), "m")
            for index in range(len(model.subgraphs)):
                TfLiteGraph(model, index)
        except ConversionError as exc:
            assert "\n" not in str(exc)


def test_hypothesis_fuzz_of_the_reader(models):
    hypothesis = pytest.importorskip("hypothesis")
    from hypothesis import strategies as st

    seed = models["int8"]

    @hypothesis.settings(max_examples=150, deadline=None, derandomize=True,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(st.lists(st.tuples(st.integers(0, len(seed) - 1), st.binary(min_size=1, max_size=4)),
                               min_size=1, max_size=6), st.integers(8, len(seed)))
    def check(edits, length):
        data = bytearray(seed)
        for at, value in edits:
            data[at:at + len(value)] = value
        data = bytes(data[:length])
        try:
            model = parse_tflite(data, "m")
            for index in range(len(model.subgraphs)):
                TfLiteGraph(model, index)
        except ConversionError as exc:
            assert "\n" not in str(exc)
    check()
