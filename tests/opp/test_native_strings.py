"""tf2ir's own native string kernels (opp/native/strings.cc) against their Python kernels
(opp/strings.py) and TensorFlow's ops: one-node models of ai.tf2ir.strings run by
tf2ir.InferenceSession, each asserting that the native library ran the node
(native_ops == N, python_ops == 0)."""

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st
from onnx import TensorProto as T
from onnx import helper

import tf2ir
from tf2ir.opp import strings as kernels
from tf2ir.plugins.builtin import native

tf = pytest.importorskip("tensorflow")
DOMAIN = "ai.tf2ir.strings"
LIBRARY = next(lib for lib in native.tf2ir_native_libraries() if lib.domain == DOMAIN)
pytestmark = pytest.mark.skipif(LIBRARY.path is None, reason="tf2ir's native library was not built")

TRICKY = ["Hello World", "ÀÉÎÕÜ àéîõü", "Ｆｕｌｌ－ｗｉｄｔｈ ＡＢＣ", "日本語テキスト", "Привет МИР",
          "ΣΑΣ ΟΔΟΣ Σ", "ΌΣΟΣ'Σ ΑΣ.", "straße ß ŉ ǅ ǈ ﬁ", "İstanbul ıi", "ΐ ΰ ᾳ", "", " ",
          "x" * 3000 + "ÉΣ", "tab\tnew\nline\r\x0b\x0c", "a,b,,c", "  lead and trail  ", "e\u0301Σ\u0301",
          "emoji 😀 𐐀𐐨", "Ⱟ ꟁ Ꟑ \u1734"]


def _model(op, inputs, outputs, initializers=(), nodes=(), **attrs):
    node = helper.make_node(op, [n for n, _ in inputs], [n for n, _ in outputs], domain=DOMAIN,
                            **attrs)
    graph = helper.make_graph(list(nodes) + [node], "g",
                              [helper.make_tensor_value_info(n, t, None) for n, t in inputs
                               if n not in {i.name for i in initializers}],
                              [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
                              initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                   helper.make_opsetid(DOMAIN, 1)])


def _session(model, native_ops=1):
    session = tf2ir.InferenceSession(model)
    assert (session.native_ops, session.python_ops) == (native_ops, 0)
    assert session.native_libraries == [LIBRARY.path]
    return session


def _text(values):
    """TF's bytes as the str onnxruntime hands back."""
    return np.vectorize(lambda b: b.decode("utf-8"), otypes=[object])(np.asarray(values))


def _shaped(values, shape):
    flat = (values * (int(np.prod(shape)) // len(values) + 1))[:int(np.prod(shape))]
    return np.array(flat, object).reshape(shape)


SHAPES = [(), (0,), (len(TRICKY),), (3, 0), (4, 5), (2, 3, 4)]


# -- StringCase ------------------------------------------------------------------------------------
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("encoding", ["", "utf-8"])
@pytest.mark.parametrize("shape", SHAPES)
def test_case_matches_python_and_tf(upper, encoding, shape):
    x = _shaped(TRICKY, shape)
    session = _session(_model("StringCase", [("x", T.STRING)], [("y", T.STRING)],
                              upper=int(upper), encoding=encoding))
    got = session.run(None, {"x": x})[0]
    change = tf.strings.upper if upper else tf.strings.lower
    expected = _text(change(tf.constant(x.astype(object)), encoding=encoding).numpy())
    assert got.shape == x.shape
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got, kernels.string_case(x, upper, encoding))


def test_case_every_code_point_matches_tf():
    """All 1.1M code points, alone and around a capital sigma, as TF's ICU cases them."""
    chars = [chr(c) for c in range(1, 0x110000) if not 0xD800 <= c <= 0xDFFF]
    texts = np.array(chars + [c + "\u03a3" for c in chars[::7]] +
                     ["A\u03a3" + c + "A" for c in chars[3::7]], object)
    for upper in (False, True):
        session = _session(_model("StringCase", [("x", T.STRING)], [("y", T.STRING)],
                                  upper=int(upper), encoding="utf-8"))
        got = session.run(None, {"x": texts})[0]
        change = tf.strings.upper if upper else tf.strings.lower
        expected = _text(change(tf.constant(texts), encoding="utf-8").numpy())
        assert np.flatnonzero(got != expected).tolist() == []


BAD_UTF8 = [b"\xff", b"A\xc3", b"\xe2\x82Z", b"\xf0\x80\x80a", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
            b"\xc0\xafB", b"\x80\x80C\xce\xa3", b"\xce\xa3\xffQ", b"a\x00B\xff", b"\xf0\x9f\x98"]


@pytest.mark.parametrize("upper", [False, True])
def test_case_of_invalid_utf8_and_nul_as_tf(upper):
    """utf-8: TF reads up to a NUL and turns ill-formed bytes into U+FFFD; ASCII mode keeps
    every byte (shown through the native hash of the result, as onnxruntime's Python API
    cannot hand back invalid UTF-8)."""
    const = helper.make_tensor("x", T.STRING, [len(BAD_UTF8)], BAD_UTF8)
    model = _model("StringCase", [("x", T.STRING)], [("y", T.STRING)], initializers=[const],
                   upper=int(upper), encoding="utf-8")
    change = tf.strings.upper if upper else tf.strings.lower
    got = _session(model).run(None, {})[0]
    np.testing.assert_array_equal(got, _text(change(tf.constant(BAD_UTF8), encoding="utf-8")))
    np.testing.assert_array_equal(got, kernels.string_case(np.array(BAD_UTF8, object), upper,
                                                           "utf-8"))
    ascii_case = helper.make_node("StringCase", ["x"], ["c"], domain=DOMAIN, upper=int(upper),
                                  encoding="")
    model = _model("StringToHashBucketFast", [("c", T.STRING)], [("h", T.INT64)],
                   initializers=[const], nodes=[ascii_case], num_buckets=2 ** 62)
    model.graph.input.pop()
    got = _session(model, native_ops=2).run(None, {})[0]
    expected = tf.strings.to_hash_bucket_fast(change(tf.constant(BAD_UTF8)), 2 ** 62).numpy()
    np.testing.assert_array_equal(got, expected)


def test_case_refuses_an_unknown_encoding():
    session = _session(_model("StringCase", [("x", T.STRING)], [("y", T.STRING)],
                              encoding="latin-1"))
    with pytest.raises(tf2ir.ir.onnx.runtime.KernelError, match="encoding 'latin-1'"):
        session.run(None, {"x": np.array(["a"], object)})


# -- StringSplitV2 ---------------------------------------------------------------------------------
def _split_model(maxsplit):
    return _model("StringSplitV2", [("x", T.STRING), ("sep", T.STRING)],
                  [("indices", T.INT64), ("values", T.STRING), ("shape", T.INT64)],
                  maxsplit=maxsplit)


@pytest.mark.parametrize("sep", ["", " ", ",", ",,", "ΣΑ", "xx"])
@pytest.mark.parametrize("maxsplit", [-1, 0, 1, 2, -3])
@pytest.mark.parametrize("size", [0, 1, len(TRICKY)])
def test_split_matches_python_and_tf(sep, maxsplit, size):
    x = np.array(TRICKY[:size] + ["a,,b,", ",", "xxaxxxbxx", "  a  b  "][:size], object)
    got = _session(_split_model(maxsplit)).run(None, {"x": x, "sep": np.array(sep, object)})
    raw = tf.raw_ops.StringSplitV2(input=tf.constant(x.astype(object)), sep=sep,
                                   maxsplit=maxsplit)
    expected = [raw.indices.numpy(), _text(raw.values.numpy()), raw.shape.numpy()]
    python = kernels.string_split_v2(x, np.array(sep, object), maxsplit)
    for g, e, p in zip(got, expected, python):
        np.testing.assert_array_equal(g, e)
        np.testing.assert_array_equal(g, p)
        assert g.shape == e.shape


def test_split_keeps_nul_bytes():
    got = _session(_split_model(-1)).run(None, {"x": np.array(["a\x00b c\x00", "\x00"], object),
                                                "sep": np.array("", object)})
    assert got[1].tolist() == ["a\x00b", "c\x00", "\x00"]


# -- StringJoin ------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(), (0,), (4,), (2, 3), (2, 0, 3), (2, 1, 3)])
@pytest.mark.parametrize("separator", ["", "-", "·Σ·"])
def test_join_matches_python_and_tf(shape, separator):
    a, b = _shaped(TRICKY, shape), _shaped(TRICKY[::-1], shape)
    c = np.array("ß\x00!", object)
    model = _model("StringJoin", [("a", T.STRING), ("c", T.STRING), ("b", T.STRING)],
                   [("y", T.STRING)], separator=separator)
    got = _session(model).run(None, {"a": a, "b": b, "c": c})[0]
    expected = tf.strings.join([tf.constant(v.astype(object)) for v in (a, c, b)], separator)
    np.testing.assert_array_equal(got, _text(expected.numpy()))
    np.testing.assert_array_equal(got, kernels.string_join(a, c, b, separator=separator))
    assert got.shape == shape


def test_join_of_one_input_and_mismatched_shapes():
    one = _session(_model("StringJoin", [("a", T.STRING)], [("y", T.STRING)], separator="+"))
    assert one.run(None, {"a": np.array(["p", "q"], object)})[0].tolist() == ["p", "q"]
    two = _session(_model("StringJoin", [("a", T.STRING), ("b", T.STRING)], [("y", T.STRING)]))
    a, b = np.array(["p", "q", "r"], object), np.array(["x"], object)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Input shapes do not match"):
        tf.strings.join([a, b])
    with pytest.raises(tf2ir.ir.onnx.runtime.KernelError, match=r"do not match: \[3\] vs. \[1\]"):
        two.run(None, {"a": a, "b": b})
    with pytest.raises(ValueError, match="do not match"):
        kernels.string_join(a, b)


# -- Substr ----------------------------------------------------------------------------------------
def _substr_model(unit, dtype):
    index = T.INT32 if dtype == np.int32 else T.INT64
    return _model("Substr", [("x", T.STRING), ("pos", index), ("len", index)],
                  [("y", T.STRING)], unit=unit)


def _tf_substr(x, pos, length, unit):
    return tf.strings.substr(tf.constant(np.asarray(x).astype(object)), pos, length, unit=unit)


WORDS = ["hello", "héllo wörld", "日本語", "", "ab", "Σσς", "😀x😀"]
POSITIONS = [(0, 2), (1, -1), (-2, 1), (-2, 0), (2, 10), (0, 0), (-1, 5), (1, 0)]


@pytest.mark.parametrize("unit", ["BYTE", "UTF8_CHAR"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("pos,length", POSITIONS)
def test_substr_scalar_positions(unit, dtype, pos, length):
    session = _session(_substr_model(unit, dtype))
    for word in WORDS:
        x = np.array([word, word], object)
        p, n = np.array(pos, dtype), np.array(length, dtype)
        try:
            expected = _text(_tf_substr(x, p, n, unit).numpy())
        except tf.errors.InvalidArgumentError:
            with pytest.raises(tf2ir.ir.onnx.runtime.KernelError, match="out of range"):
                session.run(None, {"x": x, "pos": p, "len": n})
            with pytest.raises(ValueError, match="out of range"):
                kernels.substr_kernel(x, p, n, unit)
            continue
        except UnicodeDecodeError:   # a BYTE piece of a character: see the hash test
            continue
        got = session.run(None, {"x": x, "pos": p, "len": n})[0]
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(got, kernels.substr_kernel(x, p, n, unit))


@pytest.mark.parametrize("unit", ["BYTE", "UTF8_CHAR"])
@pytest.mark.parametrize("x_shape,pos_shape", [((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 3), (2, 1)),
                                               ((3,), (2, 1)), ((), (4,)), ((2, 2, 2), (2, 2, 2)),
                                               ((0, 3), (3,)), ((3,), (3,)), ((4,), (1,))])
def test_substr_broadcasting_as_tf(unit, x_shape, pos_shape):
    rng = np.random.default_rng(7)
    x = _shaped(["hello", "wörld", "日本語x", "abcdef"] if unit == "UTF8_CHAR" else
                ["hello", "world", "xyz", "abcdef"], x_shape)
    pos = rng.integers(-3, 4, pos_shape).astype(np.int64)
    length = rng.integers(-1, 5, pos_shape).astype(np.int64)
    if unit == "UTF8_CHAR":
        length = np.abs(length)
    expected = _text(_tf_substr(x, pos, length, unit).numpy())
    got = _session(_substr_model(unit, np.int64)).run(None, {"x": x, "pos": pos, "len": length})[0]
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got, kernels.substr_kernel(x, pos, length, unit))


@pytest.mark.parametrize("x_shape,pos_shape,len_shape,match", [
    ((2, 2), (1, 2, 2), (1, 2, 2), "not implemented for 3 dimensions"),
    ((2,), (3,), (3,), r"Incompatible shapes: \[2\] vs. \[3\]"),
    ((2,), (2,), (1,), "pos and len should have the same shape")])
def test_substr_shape_errors_as_tf(x_shape, pos_shape, len_shape, match):
    x = _shaped(["abc", "defg"], x_shape)
    pos, length = np.zeros(pos_shape, np.int64), np.ones(len_shape, np.int64)
    with pytest.raises((tf.errors.InvalidArgumentError, tf.errors.UnimplementedError),
                       match=match):
        _tf_substr(x, pos, length, "BYTE")
    with pytest.raises(tf2ir.ir.onnx.runtime.KernelError, match=match):
        _session(_substr_model("BYTE", np.int64)).run(None, {"x": x, "pos": pos, "len": length})
    with pytest.raises(ValueError, match=match):
        kernels.substr_kernel(x, pos, length, "BYTE")


def test_substr_of_invalid_utf8_and_split_characters():
    """A BYTE piece of a character and UTF8_CHAR counting over ill-formed bytes (a byte with
    its trailing 0x80-0xBF bytes is one character, as TF counts), seen through the hash."""
    data = [b"h\xc3\xa9llo", b"\xff\x80ab", b"\x80\x80c", b"a\x00\xe6\x97\xa5b"]
    const = helper.make_tensor("x", T.STRING, [len(data)], data)
    for unit, pos, length in [("BYTE", 1, 1), ("BYTE", -3, -1), ("UTF8_CHAR", 1, 2),
                              ("UTF8_CHAR", -2, 1), ("UTF8_CHAR", 0, 1)]:
        sub = helper.make_node("Substr", ["x", "p", "n"], ["s"], domain=DOMAIN, unit=unit)
        model = _model("StringToHashBucketFast", [("s", T.STRING)], [("h", T.INT64)],
                       initializers=[const, helper.make_tensor("p", T.INT64, [], [pos]),
                                     helper.make_tensor("n", T.INT64, [], [length])],
                       nodes=[sub], num_buckets=2 ** 62)
        model.graph.input.pop()
        got = _session(model, native_ops=2).run(None, {})[0]
        expected = tf.strings.to_hash_bucket_fast(_tf_substr(data, pos, length, unit), 2 ** 62)
        np.testing.assert_array_equal(got, expected.numpy(), err_msg=f"{unit} {pos} {length}")


# -- StringEqual -----------------------------------------------------------------------------------
@pytest.mark.parametrize("negate", [False, True])
@pytest.mark.parametrize("a_shape,b_shape", [((), ()), ((5,), (5,)), ((5,), ()), ((2, 1), (1, 3)),
                                             ((0, 3), (3,)), ((2, 3, 4), (3, 1)), ((1, 2, 1, 2), (2,))])
def test_equal_matches_python_and_tf(negate, a_shape, b_shape):
    values = ["a", "b", "a\x00", "", "é", "e\u0301"]
    a, b = _shaped(values, a_shape), _shaped(values[::-1] + ["a"], b_shape)
    model = _model("StringEqual", [("a", T.STRING), ("b", T.STRING)], [("y", T.BOOL)],
                   negate=int(negate))
    got = _session(model).run(None, {"a": a, "b": b})[0]
    compare = tf.not_equal if negate else tf.equal
    expected = compare(tf.constant(a.astype(object)), tf.constant(b.astype(object))).numpy()
    assert got.shape == expected.shape and got.dtype == np.bool_
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got, kernels.string_equal_kernel(a, b, negate))


def test_equal_refuses_incompatible_shapes():
    model = _model("StringEqual", [("a", T.STRING), ("b", T.STRING)], [("y", T.BOOL)])
    with pytest.raises(tf2ir.ir.onnx.runtime.KernelError, match="Incompatible shapes"):
        _session(model).run(None, {"a": np.array(["a", "b"], object),
                                   "b": np.array(["a", "b", "c"], object)})


# -- native == Python kernel on random text -------------------------------------------------------
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
TEXTS = st.lists(TEXT, max_size=6)


@settings(max_examples=60, deadline=None)
@given(TEXTS, st.booleans(), st.sampled_from(["", "utf-8"]))
def test_case_property(texts, upper, encoding):
    x = np.array(texts, object).reshape(len(texts))
    session = _session(_model("StringCase", [("x", T.STRING)], [("y", T.STRING)],
                              upper=int(upper), encoding=encoding))
    np.testing.assert_array_equal(session.run(None, {"x": x})[0],
                                  kernels.string_case(x, upper, encoding))


@settings(max_examples=60, deadline=None)
@given(TEXTS, st.sampled_from(["", " ", "a", "ab", "Σ", "\u00e9"]), st.integers(-2, 3))
def test_split_property(texts, sep, maxsplit):
    x = np.array(texts, object).reshape(len(texts))
    got = _session(_split_model(maxsplit)).run(None, {"x": x, "sep": np.array(sep, object)})
    for g, p in zip(got, kernels.string_split_v2(x, np.array(sep, object), maxsplit)):
        np.testing.assert_array_equal(g, p)


@settings(max_examples=60, deadline=None)
@given(st.lists(TEXT, min_size=1, max_size=4), TEXT, st.sampled_from(["", "·", "--"]))
def test_join_property(texts, scalar, separator):
    a = np.array(texts, object).reshape(len(texts))
    model = _model("StringJoin", [("a", T.STRING), ("s", T.STRING), ("b", T.STRING)],
                   [("y", T.STRING)], separator=separator)
    got = _session(model).run(None, {"a": a, "s": np.array(scalar, object), "b": a[::-1].copy()})
    np.testing.assert_array_equal(got[0], kernels.string_join(a, np.array(scalar, object),
                                                              a[::-1], separator=separator))


@settings(max_examples=80, deadline=None)
@given(TEXTS, st.integers(-14, 14), st.integers(-3, 14), st.sampled_from(["BYTE", "UTF8_CHAR"]))
def test_substr_property(texts, pos, length, unit):
    x = np.array(texts, object).reshape(len(texts))
    p, n = np.array(pos, np.int64), np.array(length, np.int64)
    try:
        expected = kernels.substr_kernel(x, p, n, unit)
    except ValueError as exc:
        assume("splits a UTF-8 character" not in str(exc))
        with pytest.raises(tf2ir.ir.onnx.runtime.KernelError, match=f"pos {pos} out of range"):
            _session(_substr_model(unit, np.int64)).run(None, {"x": x, "pos": p, "len": n})
        return
    got = _session(_substr_model(unit, np.int64)).run(None, {"x": x, "pos": p, "len": n})[0]
    np.testing.assert_array_equal(got, expected)


# -- end to end: a converted TF text function runs natively --------------------------------------
def test_converted_text_function_runs_natively():
    from tf2ir.tools.api import convert

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def text(x):
        words = tf.strings.split(tf.strings.lower(x, encoding="utf-8"))   # StringSplitV2
        heads = tf.strings.substr(words.values, 0, 3, unit="UTF8_CHAR")
        joined = tf.strings.join([heads, tf.strings.upper(words.values)], separator="|")
        return joined, tf.equal(heads, words.values)

    result = convert(text, quiet=True)
    session = tf2ir.InferenceSession(result.model)
    ops = {n.op_type for n in result.model.graph.node if n.domain == DOMAIN}
    assert ops >= {"StringCase", "StringSplitV2", "Substr", "StringJoin", "StringEqual"}
    assert session.python_ops == 0 and session.native_ops >= 6
    x = np.array(["ΣΑΣ ΟΔΟΣ Straße", "", "  Привет  МИР  ", "日本語 テキスト ok"], object)
    got = session.run(None, {session.get_inputs()[0].name: x})
    expected = text(tf.constant(x.astype(object)))
    np.testing.assert_array_equal(got[0], _text(expected[0].numpy()))
    np.testing.assert_array_equal(got[1], expected[1].numpy())
