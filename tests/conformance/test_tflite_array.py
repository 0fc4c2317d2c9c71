"""TFLite's array and shape ops (plugins/builtin/tflite_array.py) against the LiteRT interpreter:
each case a small TF function TF's TFLiteConverter turns into the op (the op is checked to be in
the model), or, for the forms the converter never writes (RESHAPE's new_shape option, a fused
activation on CONCATENATION, RANK), a model built here with the flatbuffer schema."""

import os

import numpy as np
import pytest

from tests.conformance.tflite_harness import (
    SEED, check_tflite, convert_tflite, spec, to_tflite)
from tests.conformance.tflite_harness_run import compare_runs

tf = pytest.importorskip("tensorflow")

TFLITE_TESTED = {
    "RESHAPE": ("float", "int8"), "TRANSPOSE": ("float", "int8"),
    "CONCATENATION": ("float", "int8"), "PACK": ("float",), "UNPACK": ("float",),
    "SPLIT": ("float", "int8"), "SPLIT_V": ("float",), "SQUEEZE": ("float", "int8"),
    "EXPAND_DIMS": ("float",), "PAD": ("float", "int8"), "PADV2": ("float",),
    "MIRROR_PAD": ("float",), "TILE": ("float",), "SHAPE": ("float",), "RANK": ("float",),
    "FILL": ("float",), "RANGE": ("float",), "BROADCAST_TO": ("float",),
    "BROADCAST_ARGS": ("float",), "MATRIX_DIAG": ("float",), "MATRIX_SET_DIAG": ("float",),
}


def tflite_ops(path):
    from tf2ir.parser.tflite_model import read_tflite
    return [op.op_type for sg in read_tflite(path).subgraphs for op in sg.operators]


def check_op(tmp_path, op_type, fn, specs, mode="float", **kw):
    """check_tflite, and that the converter's model holds `op_type` (else the case checks
    another op's mapping)."""
    name = kw.pop("name", None) or f"{op_type.lower()}_{getattr(fn, '__name__', 'case')}"
    outcome = check_tflite(tmp_path, fn, specs, mode=mode, name=name, **kw)
    path = os.path.join(str(tmp_path), f"{name}_{mode}.tflite")
    ops = tflite_ops(path)
    assert op_type in ops, f"{name}: the converter wrote {ops}, not {op_type}"
    if mode == "int8":
        from tf2ir.parser.tflite_model import read_tflite
        sg = read_tflite(path).subgraphs[0]
        types = {sg.tensors[op.outputs[0]].dtype for op in sg.operators if op.op_type == op_type}
        assert "int8" in types, f"{name}: {op_type} computes {types}, not int8"
    return outcome


# -- models the converter does not write: built from the schema -----------------------------------

def _camel(name):
    return "".join(part.capitalize() for part in name.split("_"))


def build_tflite(tensors, operators, inputs, outputs):
    """A one-subgraph .tflite model as bytes. tensors: (name, numpy dtype, shape with None for
    a dynamic dim, constant data or None[, {scale, zero_point, axis}]); operators: (builtin
    name, input indices (-1: left out), output indices, options: None or (options table
    name, {snake_case field: int or int list})); inputs, outputs: tensor indices."""
    import flatbuffers
    import tflite
    b = flatbuffers.Builder(1024)

    def ints(values):
        return b.CreateNumpyVector(np.asarray(values, np.int32))

    buffers = [None]
    for _, _, _, value, *_ in tensors:
        if value is not None:
            buffers.append(np.ascontiguousarray(value).view(np.uint8).reshape(-1))
    buffer_offsets = []
    for raw in buffers:
        vec = b.CreateNumpyVector(raw) if raw is not None else None
        tflite.BufferStart(b)
        if vec is not None:
            tflite.BufferAddData(b, vec)
        buffer_offsets.append(tflite.BufferEnd(b))
    tensor_offsets, next_buffer = [], 1
    for name, dtype, shape, value, *quant in tensors:
        name_off = b.CreateString(name)
        q = None
        if quant:
            scale = b.CreateNumpyVector(np.asarray(quant[0]["scale"], np.float32))
            zero = b.CreateNumpyVector(np.asarray(quant[0]["zero_point"], np.int64))
            tflite.QuantizationParametersStart(b)
            tflite.QuantizationParametersAddScale(b, scale)
            tflite.QuantizationParametersAddZeroPoint(b, zero)
            tflite.QuantizationParametersAddQuantizedDimension(b, quant[0].get("axis", 0))
            q = tflite.QuantizationParametersEnd(b)
        dims = ints([1 if d is None else d for d in shape])
        signature = ints([-1 if d is None else d for d in shape]) if None in shape else None
        tflite.TensorStart(b)
        tflite.TensorAddName(b, name_off)
        tflite.TensorAddShape(b, dims)
        if signature is not None:
            tflite.TensorAddShapeSignature(b, signature)
        tflite.TensorAddType(b, getattr(tflite.TensorType, np.dtype(dtype).name.upper()))
        tflite.TensorAddBuffer(b, next_buffer if value is not None else 0)
        if q is not None:
            tflite.TensorAddQuantization(b, q)
        next_buffer += value is not None
        tensor_offsets.append(tflite.TensorEnd(b))
    codes = sorted({op[0] for op in operators})
    code_offsets = []
    for code in codes:
        value = getattr(tflite.BuiltinOperator, code)
        tflite.OperatorCodeStart(b)
        tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(value, 127))
        tflite.OperatorCodeAddBuiltinCode(b, value)
        tflite.OperatorCodeAddVersion(b, 1)
        code_offsets.append(tflite.OperatorCodeEnd(b))
    op_offsets = []
    for code, op_inputs, op_outputs, options in operators:
        in_vec, out_vec, opt = ints(op_inputs), ints(op_outputs), None
        if options is not None:
            table, fields = options
            lists = {k: ints(v) for k, v in fields.items() if isinstance(v, (list, tuple))}
            getattr(tflite, f"{table}Start")(b)
            for key, value in fields.items():
                getattr(tflite, f"{table}Add{_camel(key)}")(b, lists.get(key, value))
            opt = getattr(tflite, f"{table}End")(b)
        tflite.OperatorStart(b)
        tflite.OperatorAddOpcodeIndex(b, codes.index(code))
        tflite.OperatorAddInputs(b, in_vec)
        tflite.OperatorAddOutputs(b, out_vec)
        if opt is not None:
            tflite.OperatorAddBuiltinOptionsType(b, getattr(tflite.BuiltinOptions, options[0]))
            tflite.OperatorAddBuiltinOptions(b, opt)
        op_offsets.append(tflite.OperatorEnd(b))

    def table_vector(start, offsets):
        start(b, len(offsets))
        for off in reversed(offsets):
            b.PrependUOffsetTRelative(off)
        return b.EndVector()

    tensors_vec = table_vector(tflite.SubGraphStartTensorsVector, tensor_offsets)
    ops_vec = table_vector(tflite.SubGraphStartOperatorsVector, op_offsets)
    in_vec, out_vec = ints(inputs), ints(outputs)
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, tensors_vec)
    tflite.SubGraphAddInputs(b, in_vec)
    tflite.SubGraphAddOutputs(b, out_vec)
    tflite.SubGraphAddOperators(b, ops_vec)
    subgraph = tflite.SubGraphEnd(b)
    subgraphs_vec = table_vector(tflite.ModelStartSubgraphsVector, [subgraph])
    codes_vec = table_vector(tflite.ModelStartOperatorCodesVector, code_offsets)
    buffers_vec = table_vector(tflite.ModelStartBuffersVector, buffer_offsets)
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddOperatorCodes(b, codes_vec)
    tflite.ModelAddSubgraphs(b, subgraphs_vec)
    tflite.ModelAddBuffers(b, buffers_vec)
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def check_built(tmp_path, name, model: bytes, feeds, atol=None):
    """Convert a built model and compare it with the interpreter on each feed (a list of
    arrays, in the model's input order)."""
    path = os.path.join(str(tmp_path), f"{name}.tflite")
    with open(path, "wb") as f:
        f.write(model)
    onnx_path = path[:-len(".tflite")] + ".onnx"
    convert_tflite(path, onnx_path)
    return compare_runs(path, onnx_path, feeds, "float", 1, atol, None, name)


def feeds_of(*shapes, dtype=np.float32, batches=(1, 3)):
    """One feed per batch size; None in a shape is the batch."""
    rng = np.random.default_rng(SEED)
    return [[rng.uniform(-2, 2, [bs if d is None else d for d in s]).astype(dtype)
             for s in shapes] for bs in batches]


# -- RESHAPE --------------------------------------------------------------------------------------

def test_reshape_minus_one_dynamic_batch(tmp_path):
    check_op(tmp_path, "RESHAPE", lambda x: tf.reshape(x, [-1, 12]), [spec([None, 3, 4])],
             name="reshape_minus_one")


@tf.function
def shape_chain(x):
    """The converted dynamic-batch pattern: SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE."""
    return tf.reshape(x, tf.stack([tf.shape(x)[0], 3, 4])) * 2.0


def test_reshape_by_shape_chain_dynamic_batch(tmp_path):
    outcome = check_op(tmp_path, "RESHAPE", shape_chain, [spec([None, 12])])
    ops = tflite_ops(os.path.join(str(tmp_path), "reshape_shape_chain_float.tflite"))
    assert {"SHAPE", "STRIDED_SLICE", "PACK", "RESHAPE"} <= set(ops), ops
    assert outcome.exact


def reshape_option_model(inputs):
    return build_tflite([("x", np.float32, [None, 6], None), ("y", np.float32, [None, 3, 2], None)],
                        [("RESHAPE", inputs, [1], ("ReshapeOptions", {"new_shape": [-1, 3, 2]}))],
                        [0], [1])


def test_reshape_new_shape_option(tmp_path):
    """One input, no shape tensor: the new_shape option."""
    check_built(tmp_path, "reshape_option", reshape_option_model([0]), feeds_of([None, 6]))


def test_reshape_shape_input_left_out(tmp_path):
    """Input 1 given as -1 (an optional input left out): the new_shape option too. LiteRT's
    kernel crashes on that form, so the reference is the one-input model's answer."""
    reference = os.path.join(str(tmp_path), "reshape_one_input.tflite")
    with open(reference, "wb") as f:
        f.write(reshape_option_model([0]))
    path = os.path.join(str(tmp_path), "reshape_left_out.tflite")
    with open(path, "wb") as f:
        f.write(reshape_option_model([0, -1]))
    convert_tflite(path, path[:-len(".tflite")] + ".onnx")
    compare_runs(reference, path[:-len(".tflite")] + ".onnx", feeds_of([None, 6]), "float", 1,
                 None, None, "reshape_left_out")


@pytest.mark.parametrize("options", ["legacy", "none"])
def test_reshape_scalar_option(tmp_path, options):
    """new_shape [0] is a legacy scalar, and so is no option at all: a [1] tensor becomes a
    scalar."""
    opts = ("ReshapeOptions", {"new_shape": [0]}) if options == "legacy" else None
    model = build_tflite([("x", np.float32, [1], None), ("y", np.float32, [], None)],
                         [("RESHAPE", [0], [1], opts)], [0], [1])
    outcome = check_built(tmp_path, f"reshape_scalar_{options}", model, [[np.float32([2.5])]])
    assert outcome.exact


def test_reshape_empty_shape_tensor_is_scalar(tmp_path):
    """A [0]-shaped int32 shape tensor is used (an int32 vector), whatever the option says:
    the scalar shape."""
    model = build_tflite([("x", np.float32, [1, 1], None), ("shape", np.int32, [0], None),
                          ("y", np.float32, [], None)],
                         [("RESHAPE", [0, 1], [2], ("ReshapeOptions", {"new_shape": [1, 1]}))],
                         [0, 1], [2])
    outcome = check_built(tmp_path, "reshape_empty_tensor", model,
                          [[np.float32([[1.5]]), np.zeros(0, np.int32)]])
    assert outcome.exact


def test_reshape_int64_shape_tensor_yields_to_option(tmp_path):
    """LiteRT reads the shape tensor only when it is int32: an int64 one leaves new_shape."""
    model = build_tflite([("x", np.float32, [6], None), ("s", np.int64, [2], np.int64([2, 3])),
                          ("y", np.float32, [3, 2], None)],
                         [("RESHAPE", [0, 1], [2], ("ReshapeOptions", {"new_shape": [3, 2]}))],
                         [0], [2])
    check_built(tmp_path, "reshape_int64_tensor", model, [[np.arange(6, dtype=np.float32)]])


@pytest.mark.parametrize("mode", ["int8"])
def test_reshape_int8(tmp_path, mode):
    check_op(tmp_path, "RESHAPE", shape_chain, [spec([None, 12])], mode=mode, name="reshape_int8")


# -- TRANSPOSE, SQUEEZE, EXPAND_DIMS --------------------------------------------------------------

@pytest.mark.parametrize("mode", ["float", "int8"])
def test_transpose(tmp_path, mode):
    check_op(tmp_path, "TRANSPOSE", lambda x: tf.transpose(x, [0, 2, 3, 1]) + 1.0,
             [spec([None, 2, 3, 4])], mode=mode, name=f"transpose_{mode}")


@pytest.mark.parametrize("mode", ["float", "int8"])
def test_squeeze(tmp_path, mode):
    """Two unknown dims: the converter keeps SQUEEZE (one becomes a RESHAPE)."""
    check_op(tmp_path, "SQUEEZE", lambda x: tf.squeeze(x, [1]), [spec([None, 1, None])],
             mode=mode, name=f"squeeze_{mode}",
             feeds=[[np.random.default_rng(1).uniform(-2, 2, (b, 1, n)).astype(np.float32)]
                    for b, n in ((1, 3), (2, 5))])


def test_expand_dims(tmp_path):
    check_op(tmp_path, "EXPAND_DIMS", lambda x: tf.expand_dims(x, -1), [spec([None, None])],
             feeds=[[np.arange(6, dtype=np.float32).reshape(2, 3)]])


# -- CONCATENATION, PACK, UNPACK, SPLIT, SPLIT_V --------------------------------------------------

@pytest.mark.parametrize("mode", ["float", "int8"])
def test_concatenation(tmp_path, mode):
    check_op(tmp_path, "CONCATENATION", lambda x, y: tf.concat([x, y * 2.0], -1),
             [spec([None, 3]), spec([None, 2])], mode=mode, name=f"concat_{mode}")


@pytest.mark.parametrize("act", ["RELU", "RELU6", "RELU_N1_TO_1"])
def test_concatenation_fused_activation(tmp_path, act):
    """The fused activation applies to the joined tensor. LiteRT's own kernel refuses a
    CONCATENATION with one (and XNNPACK ignores it), so the reference is the same join
    followed by the activation as an op of its own."""
    import tflite
    code = getattr(tflite.ActivationFunctionType, act)
    tensors = [("x", np.float32, [None, 2], None), ("y", np.float32, [None, 3], None),
               ("z", np.float32, [None, 5], None), ("a", np.float32, [None, 5], None)]
    fused = build_tflite(tensors[:3], [("CONCATENATION", [0, 1], [2], ("ConcatenationOptions", {
        "axis": 1, "fused_activation_function": code}))], [0, 1], [2])
    separate = build_tflite(tensors, [
        ("CONCATENATION", [0, 1], [2], ("ConcatenationOptions", {"axis": -1})),
        (act, [2], [3], None)], [0, 1], [3])
    paths = {}
    for key, model in (("fused", fused), ("separate", separate)):
        paths[key] = os.path.join(str(tmp_path), f"concat_{act.lower()}_{key}.tflite")
        with open(paths[key], "wb") as f:
            f.write(model)
    onnx_path = paths["fused"][:-len(".tflite")] + ".onnx"
    convert_tflite(paths["fused"], onnx_path)
    feeds = [[f * 4 for f in feed] for feed in feeds_of([None, 2], [None, 3])]
    import onnx
    names = [o.name for o in onnx.load(onnx_path).graph.output]
    assert names == ["z"], names
    # the separate model's output is "a": compare by position
    from tf2ir.tools.runtime import InferenceSession
    from tf2ir.tools.tflite_reference import run_tflite
    sess = InferenceSession(onnx_path)
    for feed in feeds:
        got = sess.run(None, dict(zip(["x", "y"], feed)))[0]
        want = run_tflite(paths["separate"], dict(zip(["x", "y"], feed)))["a"]
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        assert got.min() < 0 if act == "RELU_N1_TO_1" else got.min() == 0


def test_concatenation_of_shapes_is_exact(tmp_path):
    """int32 shape pieces joined (Keras' reshapes): integer outputs exactly."""
    fn = lambda x: tf.concat([tf.shape(x)[:1], tf.constant([7]), tf.shape(x)[1:]], 0)  # noqa: E731
    check_op(tmp_path, "CONCATENATION", fn, [spec([None, 4])], name="concat_shapes")


def test_pack(tmp_path):
    check_op(tmp_path, "PACK", lambda x, y: tf.stack([x, y, x + y], axis=1),
             [spec([None, 3]), spec([None, 3])])


def test_unpack(tmp_path):
    check_op(tmp_path, "UNPACK", lambda x: tf.unstack(x, axis=1), [spec([None, 3, 2])])


@pytest.mark.parametrize("mode", ["float", "int8"])
def test_split(tmp_path, mode):
    """SPLIT takes its axis first."""
    check_op(tmp_path, "SPLIT", lambda x: tf.split(x, 2, axis=-1), [spec([None, 4])],
             mode=mode, name=f"split_{mode}")


def test_split_v(tmp_path):
    check_op(tmp_path, "SPLIT_V", lambda x: tf.split(x, [1, -1, 2], axis=1), [spec([None, 6])])


# -- padding, tiling, broadcasting ----------------------------------------------------------------

@pytest.mark.parametrize("mode", ["float", "int8"])
def test_pad(tmp_path, mode):
    check_op(tmp_path, "PAD", lambda x: tf.pad(x, [[0, 0], [1, 2], [2, 0]]),
             [spec([None, 2, 3])], mode=mode, name=f"pad_{mode}")


def test_padv2(tmp_path):
    check_op(tmp_path, "PADV2", lambda x: tf.pad(x, [[0, 0], [1, 2]], constant_values=-3.5),
             [spec([None, 3])])


@pytest.mark.parametrize("mode", ["REFLECT", "SYMMETRIC"])
def test_mirror_pad(tmp_path, mode):
    check_op(tmp_path, "MIRROR_PAD", lambda x: tf.pad(x, [[0, 0], [2, 1]], mode=mode),
             [spec([None, 4])], name=f"mirror_{mode.lower()}")


def test_tile(tmp_path):
    check_op(tmp_path, "TILE", lambda x: tf.tile(x, [1, 3, 2]), [spec([None, 2, 2])])


def test_broadcast_to(tmp_path):
    check_op(tmp_path, "BROADCAST_TO", lambda x: tf.broadcast_to(x, [2, 3, 4]), [spec([3, 1])])


def test_broadcast_args(tmp_path):
    fn = lambda x, y: tf.broadcast_dynamic_shape(tf.shape(x), tf.shape(y))  # noqa: E731
    check_op(tmp_path, "BROADCAST_ARGS", fn, [spec([None, 1, 3]), spec([None, 4, 1])],
             feeds=[[np.ones((2, 1, 3), np.float32), np.ones((1, 4, 1), np.float32)],
                    [np.ones((1, 1, 3), np.float32), np.ones((5, 4, 1), np.float32)]])


# -- shapes and creation --------------------------------------------------------------------------

@pytest.mark.parametrize("out_type", ["int32", "int64"])
def test_shape(tmp_path, out_type):
    check_op(tmp_path, "SHAPE", lambda x: tf.shape(x, out_type=getattr(tf, out_type)),
             [spec([None, 4])], name=f"shape_{out_type}")


def test_rank(tmp_path):
    model = build_tflite([("x", np.float32, [None, 3], None), ("r", np.int32, [], None)],
                         [("RANK", [0], [1], None)], [0], [1])
    outcome = check_built(tmp_path, "rank", model, feeds_of([None, 3]))
    assert outcome.exact


def test_fill(tmp_path):
    check_op(tmp_path, "FILL", lambda x: tf.fill(tf.shape(x), 2.5) + x, [spec([None, 4])])


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_range(tmp_path, dtype):
    if dtype == "int32":
        fn = lambda x: tf.range(1, tf.shape(x)[0] * 3, 2)  # noqa: E731
    else:
        fn = lambda x: tf.range(x[0], x[1], 0.5)  # noqa: E731
    check_op(tmp_path, "RANGE", fn, [spec([None, 2] if dtype == "int32" else [2])],
             name=f"range_{dtype}",
             feeds=None if dtype == "int32" else [[np.float32([-1.0, 2.0])],
                                                  [np.float32([0.3, 4.1])]])


def test_matrix_diag(tmp_path):
    check_op(tmp_path, "MATRIX_DIAG", lambda x: tf.linalg.diag(x), [spec([None, 3])])


def test_matrix_set_diag(tmp_path):
    check_op(tmp_path, "MATRIX_SET_DIAG", lambda x, d: tf.linalg.set_diag(x, d),
             [spec([2, 3, 3]), spec([2, 3])])


# -- the shape arithmetic of a converted Keras encoder --------------------------------------------

def keras_encoder():
    """Embedding + MultiHeadAttention + Reshape/Permute over [batch, time] ids, both unknown:
    the converter computes every reshape's target from SHAPE (GATHER, CONCATENATION,
    REDUCE_PROD, UNSORTED_SEGMENT_PROD, STRIDED_SLICE, PACK) at run time."""
    keras = pytest.importorskip("keras")
    keras.utils.set_random_seed(5)
    ids = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(20, 8)(ids)
    x = x + keras.layers.MultiHeadAttention(2, 4)(x, x)
    x = keras.layers.Reshape((-1, 2, 4))(x)
    x = keras.layers.Permute((2, 1, 3))(x)
    model = keras.Model(ids, keras.layers.GlobalAveragePooling2D()(x))
    return tf.function(lambda i: model(i))


@pytest.mark.parametrize("mode", ["float", "int8"])
def test_keras_encoder_dynamic_batch_and_time(tmp_path, mode):
    fn = keras_encoder()
    rng = np.random.default_rng(3)
    feeds = [[rng.integers(0, 20, shape).astype(np.int32)] for shape in ((1, 5), (3, 2))]
    check_op(tmp_path, "TRANSPOSE", fn, [spec([None, None], "int32")], mode=mode,
             name="keras_encoder", feeds=feeds)
    ops = set(tflite_ops(os.path.join(str(tmp_path), f"keras_encoder_{mode}.tflite")))
    assert {"SHAPE", "GATHER", "CONCATENATION", "UNSORTED_SEGMENT_PROD", "PACK", "STRIDED_SLICE",
            "RESHAPE"} <= ops, ops


def test_unpack_count_not_matching_outputs_is_one_error_line(tmp_path):
    """UNPACK's `num` option saying 3 where the model lists 2 outputs: a ConversionError
    naming the node and op, not a model with a missing output."""
    from tf2ir.ir.errors import ConversionError
    model = build_tflite([("x", np.float32, [2, 3], None), ("a", np.float32, [3], None),
                          ("b", np.float32, [3], None)],
                         [("UNPACK", [0], [1, 2], ("UnpackOptions", {"num": 3, "axis": 0}))],
                         [0], [1, 2])
    path = os.path.join(str(tmp_path), "unpack_bad.tflite")
    with open(path, "wb") as f:
        f.write(model)
    with pytest.raises(ConversionError) as info:
        convert_tflite(path, path[:-len(".tflite")] + ".onnx")
    message = str(info.value)
    assert "\n" not in message and "UNPACK" in message and "num=3" in message, message
    assert not os.path.exists(path[:-len(".tflite")] + ".onnx")


def test_squeeze_without_dims_squeezes_every_unit_dim(tmp_path):
    """An empty squeeze_dims: every size-1 dim goes."""
    model = build_tflite([("x", np.float32, [2, 1, 3, 1], None), ("y", np.float32, [2, 3], None)],
                         [("SQUEEZE", [0], [1], ("SqueezeOptions", {"squeeze_dims": []}))],
                         [0], [1])
    check_built(tmp_path, "squeeze_all", model,
                [[np.arange(6, dtype=np.float32).reshape(2, 1, 3, 1)]])


def test_reshape_to_scalar_by_empty_shape_constant(tmp_path):
    """TF's converter writes tf.reshape(x, []) as RESHAPE with a [0]-shaped constant whose
    buffer is empty: an empty constant (was refused as a tensor that holds no data)."""
    outcome = check_op(tmp_path, "RESHAPE", lambda x: tf.reshape(x, []) * 2.0, [spec([1])],
                       name="reshape_scalar", feeds=[[np.float32([1.25])]])
    assert outcome.exact
