"""TFLite Flex (Select TF) ops: TF's converter with SELECT_TF_OPS keeps ops TFLite has no
builtin for as custom ops "Flex<Op>" holding their NodeDef; tf2ir maps them with its TF
plugins (parser/tflite_flex.py). The LiteRT interpreter installed here has no Flex delegate
(it refuses such models), so the reference is TensorFlow running the same function: a Flex op
runs TF's own kernel. Malformed and unknown Flex ops fail in one line naming the node."""

import numpy as np
import pytest

from tests.conformance.tflite_harness import SEED, convert_tflite, spec, to_tflite

tf = pytest.importorskip("tensorflow")

TFLITE_TESTED = {"FlexErf": ("float",), "FlexSinh": ("float",), "FlexCumprod": ("float",)}


def erf_affine(x):
    return tf.math.erf(x) * 2.0 + 1.0          # FlexErf, then builtin MUL and ADD


def sinh(x):
    return tf.math.sinh(x)


def cumprod(x):
    return tf.math.cumprod(x, axis=1, exclusive=True)   # an attr and a constant input


def _convert(tmp_path, fn, specs, name):
    data = to_tflite(tf.function(fn), specs, select_tf=True)
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(data)
    return path


def _ops(path):
    from tf2ir.parser.tflite_model import read_tflite
    return [op.op_type for op in read_tflite(str(path)).subgraphs[0].operators]


@pytest.mark.parametrize("fn,flex", [(erf_affine, "FlexErf"), (sinh, "FlexSinh"),
                                     (cumprod, "FlexCumprod")], ids=["erf", "sinh", "cumprod"])
def test_flex_op_against_tf(tmp_path, fn, flex):
    from tf2ir.tools.runtime import InferenceSession
    path = _convert(tmp_path, fn, [spec([None, 5])], flex)
    assert flex in _ops(path)
    onnx_path = tmp_path / f"{flex}.onnx"
    convert_tflite(str(path), str(onnx_path))
    sess = InferenceSession(str(onnx_path))
    rng = np.random.default_rng(SEED)
    for batch in (1, 3):
        x = rng.uniform(-2, 2, (batch, 5)).astype(np.float32)
        got = sess.run(None, {sess.get_inputs()[0].name: x})
        assert len(got) == 1
        np.testing.assert_allclose(got[0], fn(tf.constant(x)).numpy(), rtol=1e-5, atol=1e-6)


# -- malformed and unknown Flex ops: the model edited through TF's flatbuffer object API -------
def _edit_flex(src_path, dst_path, code=None, options=None):
    """A copy of the model whose first Flex operator has custom code `code` and/or options
    `options` (bytes)."""
    from tensorflow.lite.python import schema_py_generated as schema
    import flatbuffers
    model = schema.ModelT.InitFromPackedBuf(bytearray(src_path.read_bytes()), 0)
    op = next(o for o in model.subgraphs[0].operators
              if (model.operatorCodes[o.opcodeIndex].customCode or b"").startswith(b"Flex"))
    if code is not None:
        model.operatorCodes[op.opcodeIndex].customCode = code
    if options is not None:
        op.customOptions = list(options)
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    dst_path.write_bytes(bytes(builder.Output()))
    return dst_path


def _flex_options(op_type: str, node_def: bytes) -> bytes:
    """[op type, NodeDef] as TF's converter writes it: a flexbuffer vector of two strings."""
    from flatbuffers import flexbuffers
    builder = flexbuffers.Builder()
    with builder.Vector():
        builder.String(op_type)
        builder._WriteBlob(node_def, append_zero=True, type_=flexbuffers.Type.STRING)
    return bytes(builder.Finish())


def _erf_node_def(op="Erf", extra_float=None) -> bytes:
    from tensorboard.compat.proto import node_def_pb2
    node = node_def_pb2.NodeDef(name="Erf", op=op)
    node.attr["T"].type = 1     # DT_FLOAT
    if extra_float is not None:
        node.attr["_tolerance"].f = extra_float
    return node.SerializeToString()


@pytest.fixture(scope="module")
def erf_model(tmp_path_factory):
    return _convert(tmp_path_factory.mktemp("flex"), erf_affine, [spec([None, 5])], "erf")


def test_node_def_with_binary_bytes_reads_exactly(tmp_path, erf_model):
    """A NodeDef holding bytes that are not UTF-8 (a float attribute 0.1: cd cc cc 3d) reads
    as stored: decoding the flexbuffer string as text would fail or change it."""
    node_def = _erf_node_def(extra_float=0.1)
    with pytest.raises(UnicodeDecodeError):
        node_def.decode("utf-8")
    from tf2ir.parser.tflite_flex import _node_def_bytes
    assert _node_def_bytes(_flex_options("Erf", node_def)) == node_def
    path = _edit_flex(erf_model, tmp_path / "binary.tflite", options=_flex_options("Erf", node_def))
    from tf2ir.parser.tflite_view import read_tflite_view
    view = read_tflite_view(str(path))
    node = next(n for n in view.nodes.values() if n.op_type == "Erf")
    assert node.framework == "TENSORFLOW"
    assert abs(node.attr("_tolerance") - 0.1) < 1e-7


@pytest.mark.parametrize("case", ["unknown_op", "mismatch", "not_flexbuffer", "bad_node_def"])
def test_bad_flex_op_one_line_error(tmp_path, erf_model, case):
    from tf2ir.ir.errors import ConversionError
    edits = {
        "unknown_op": dict(code=b"FlexNoSuchOp",
                           options=_flex_options("NoSuchOp", _erf_node_def("NoSuchOp"))),
        "mismatch": dict(options=_flex_options("Erf", _erf_node_def("Sinh"))),
        "not_flexbuffer": dict(options=b"\x01"),
        "bad_node_def": dict(options=_flex_options("Erf", b"\xff\xff\xff")),
    }
    expected = {"unknown_op": "NoSuchOp", "mismatch": "'Sinh', not Erf",
                "not_flexbuffer": "not a flexbuffer", "bad_node_def": "does not parse"}
    path = _edit_flex(erf_model, tmp_path / f"{case}.tflite", **edits[case])
    onnx_path = tmp_path / f"{case}.onnx"
    with pytest.raises(ConversionError) as info:
        convert_tflite(str(path), str(onnx_path))
    message = str(info.value)
    assert "\n" not in message
    assert expected[case] in message
    assert "Erf" in message or "NoSuchOp" in message    # the node (named after its tensor) / op
    assert not onnx_path.exists()
