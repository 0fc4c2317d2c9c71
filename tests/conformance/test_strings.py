"""Conformance of the string ops (opp/strings.py) against TensorFlow, run through tf2ir's
runtime entry (tf2ir.InferenceSession: the family's kernels; RegexReplace's too, in this
process that has loaded TensorFlow; more in test_regex.py), and a text-preprocessing model:
lowercase, hash to buckets, embedding, dense."""

import gc
import os
import tempfile

import numpy as np
import pytest

from tests.conformance.harness import (
    as_text, assert_close, convert_function, relaxed, single_op_graph, spec,
)

tf = pytest.importorskip("tensorflow")
raw = tf.raw_ops

NUMBERS = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
           "uint16", "uint32", "uint64")
TESTED_DTYPES = {
    "StringLower": ("string",), "StringUpper": ("string",), "StringToHashBucketFast": ("string",),
    "StringToNumber": ("string",), "AsString": NUMBERS + ("bool",),
    "StringSplitV2": ("string",), "StringJoin": ("string",), "Substr": ("string",),
    "RegexReplace": ("string",), "StaticRegexReplace": ("string",),
}

WORDS = np.array(["Hello", "WORLD", "", "ÄÖü Straße", "abc123 ", "x" * 70, "日本語", "MiXeD Case"],
                 object)


RUN_APART = """
import sys, numpy as np, tf2ir
feeds = dict(np.load(sys.argv[1], allow_pickle=True))
outs = tf2ir.InferenceSession(sys.argv[2]).run(None, feeds)
np.savez(sys.argv[1], *outs)
"""


def run_apart(path, feeds, directory):
    """Run the model in a process without TensorFlow: TF's RE2 symbols, loaded first, break
    onnxruntime-extensions' regex kernels in a process that has both."""
    import subprocess
    import sys
    data = os.path.join(directory, "feeds.npz")
    np.savez(data, **feeds)
    subprocess.run([sys.executable, "-c", RUN_APART, data, path], check=True)
    with np.load(data, allow_pickle=True) as saved:
        return [saved[f"arr_{i}"] for i in range(len(saved.files))]


def check_strings(fn, inputs, specs=None, extra_inputs=(), apart=False):
    """Convert `fn`, run it through tf2ir.InferenceSession (`apart`: in a process of its own)
    and compare with TF."""
    import tf2ir
    arrays = [np.asarray(a) for a in inputs]
    if specs is None:
        specs = [spec(a.shape, "string" if a.dtype == object else a.dtype.name, f"x{i}")
                 for i, a in enumerate(arrays)]
    fn, specs, relay, reference = relaxed(fn, specs)      # the three-way shape modes
    with tempfile.TemporaryDirectory(prefix="tf2ir-str-") as directory:
        path, graph, _, _ = convert_function(fn, specs, directory)
        session = tf2ir.InferenceSession(path)
        names = [i.name for i in session.get_inputs()]
        for feed in [arrays] + [[np.asarray(a) for a in more] for more in extra_inputs]:
            feed = relay(feed)
            expected = [np.asarray(e) for e in tf.nest.flatten(
                reference(*[tf.constant(a) for a in feed]))]
            by_name = dict(zip([s.name for s in specs], feed))
            feeds = {n: by_name[n] for n in names}
            actual = run_apart(path, feeds, directory) if apart else session.run(None, feeds)
            assert len(actual) == len(expected)
            for k, (want, got) in enumerate(zip(expected, actual)):
                assert_close(as_text(want), as_text(got), what=f"output {k}")
        del session
        gc.collect()     # no live session with Python ops: the next model may add signatures
        return graph


# -- case ---------------------------------------------------------------------------------------
def test_lower_and_upper_ascii_and_utf8():
    fn = lambda x: [tf.strings.lower(x), tf.strings.upper(x),  # noqa: E731
                    tf.strings.lower(x, encoding="utf-8"), tf.strings.upper(x, encoding="utf-8")]
    check_strings(fn, [WORDS])


def test_case_of_unknown_shape_and_empty():
    fn = lambda x: tf.strings.upper(x)  # noqa: E731
    check_strings(fn, [WORDS.reshape(2, 4)], specs=[spec((None, None), "string")],
                  extra_inputs=[[np.zeros((0, 3), object)], [np.array([["scalar"]], object)]])


# -- hashing ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("buckets", [1, 7, 1000, 2 ** 40])
def test_hash_bucket_fast_is_fingerprint64(buckets):
    rng = np.random.default_rng(5)
    texts = [("".join(chr(c) for c in rng.integers(32, 127, size=n))) for n in range(0, 140, 3)]
    fn = lambda x: tf.strings.to_hash_bucket_fast(x, buckets)  # noqa: E731
    check_strings(fn, [np.array(texts + list(WORDS), object).reshape(-1, 1)],
                  specs=[spec((None, 1), "string")])


def test_fingerprint64_against_tf_for_every_length():
    from tf2ir.opp.fingerprint import fingerprint64
    rng = np.random.default_rng(1)
    data = [bytes(rng.integers(0, 256, size=n).astype(np.uint8)) for n in range(0, 260)]
    want = tf.strings.to_hash_bucket_fast(data, 2 ** 63 - 1).numpy()
    assert [fingerprint64(d) % (2 ** 63 - 1) for d in data] == want.tolist()


# -- numbers ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_string_to_number(dtype):
    texts = ["1", "-17", "+3", "  42", "0", "2147483647"] if "int" in dtype else \
        ["1.5", "-2e-3", "inf", "-inf", "3", "1e30", ".25", "nan"]
    fn = lambda x: tf.strings.to_number(x, out_type=dtype)  # noqa: E731
    check_strings(fn, [np.array(texts, object).reshape(2, -1)], specs=[spec((None, None), "string")],
                  extra_inputs=[[np.zeros((0, 2), object)]])


def test_string_to_number_failure_is_reported():
    import tf2ir
    from tf2ir.ir.onnx.runtime import KernelError
    fn = lambda x: tf.strings.to_number(x, out_type=tf.int32)  # noqa: E731
    with tempfile.TemporaryDirectory() as directory:
        path, _, _, _ = convert_function(fn, [spec((None,), "string")], directory)
        session = tf2ir.InferenceSession(path)
        with pytest.raises(KernelError, match="could not correctly convert"):
            session.run(None, {"x0": np.array(["12x"], object)})
        del session


def as_string_input(dtype):
    if dtype == "bool":
        return np.array([True, False, True])
    if "float" in dtype:
        return np.array([0.5, -1.25, 100.0, 3.0e-3, 12345.678], dtype)
    info = np.iinfo(dtype)
    return np.array([0, 1, info.max, info.min, 42], dtype)


@pytest.mark.parametrize("dtype", NUMBERS + ("bool",))
def test_as_string_defaults(dtype):
    check_strings(lambda x: tf.strings.as_string(x), [as_string_input(dtype)])


@pytest.mark.parametrize("kwargs", [
    {"precision": 2}, {"scientific": True}, {"shortest": True}, {"width": 12},
    {"width": 12, "fill": "0"}, {"precision": 3, "scientific": True, "width": 15, "fill": "-"},
    {"shortest": True, "precision": 4}])
def test_as_string_formats_floats(kwargs):
    x = np.array([[0.5, -1.25, 1e10], [3.0e-7, 12345.678, -0.0]], np.float64)
    check_strings(lambda x: tf.strings.as_string(x, **kwargs), [x])


def test_as_string_formats_ints():
    x = np.array([-5, 0, 123456], np.int32)
    check_strings(lambda x: [tf.strings.as_string(x, width=8),
                             tf.strings.as_string(x, width=8, fill="0"),
                             tf.strings.as_string(x, width=8, fill="-")], [x])


# -- split, join, substr -------------------------------------------------------------------------------
SPLIT_TEXTS = np.array(["a b  c", "", "  lead and trail  ", "one", "tab\tand\nnewline"], object)


@pytest.mark.parametrize("sep", ["", " ", "  ", "and", "a"])
@pytest.mark.parametrize("maxsplit", [-1, 0, 1, 2])
def test_string_split_v2(sep, maxsplit):
    fn = lambda x: list(raw.StringSplitV2(input=x, sep=sep, maxsplit=maxsplit))  # noqa: E731
    check_strings(fn, [SPLIT_TEXTS], specs=[spec((None,), "string")],
                  extra_inputs=[[np.zeros(0, object)], [np.array(["", ""], object)]])


def test_string_split_with_separator_at_run_time():
    fn = lambda x, s: list(raw.StringSplitV2(input=x, sep=s))  # noqa: E731
    check_strings(fn, [SPLIT_TEXTS, np.array("a", object)],
                  extra_inputs=[[SPLIT_TEXTS, np.array("", object)]])


def test_string_join_elementwise_with_scalars():
    a = np.array([["x", "y"], ["", "zz"]], object)
    fn = lambda a, b: [tf.strings.join([a, b]), tf.strings.join([a, "-", b], separator="/"),  # noqa
                       tf.strings.join([a])]
    check_strings(fn, [a, a[::-1]])


@pytest.mark.parametrize("unit", ["BYTE", "UTF8_CHAR"])
def test_substr(unit):
    texts = np.array(["Hello", "日本語です", "abc", "xyzxyz"], object)
    pos, length = np.array([1, -3, 0, 6], np.int32), np.array([3, 2, 10, 1], np.int32)
    if unit == "BYTE":
        texts = np.array(["Hello", "naïve", "abc", "xyzxyz"], object)
        pos = np.array([1, 0, 0, 6], np.int32)
        length = np.array([3, 2, 10, 1], np.int32)
    fn = lambda x, p, n: [tf.strings.substr(x, p, n, unit=unit),  # noqa: E731
                          tf.strings.substr(x, -1 if unit == "BYTE" else 1, 2, unit=unit)]
    check_strings(fn, [texts, pos, length])


def test_substr_int64_positions_of_unknown_shape():
    fn = lambda x, p: tf.strings.substr(x, p, tf.fill(tf.shape(p), tf.constant(2, tf.int64)))  # noqa: E731
    check_strings(fn, [np.array(["abcdef", "gh"], object), np.array([-2, 0], np.int64)],
                  specs=[spec((None,), "string"), spec((None,), "int64", "x1")])


# -- regular expressions ---------------------------------------------------------------------------
@pytest.mark.parametrize("replace_global", [True, False])
def test_regex_replace_static_and_dynamic(replace_global):
    fn = lambda x, p: [tf.strings.regex_replace(x, r"[aeiou]+", "<\\0>",  # noqa: E731
                                                replace_global=replace_global),
                       tf.strings.regex_replace(x, r"(\w+) (\w+)", r"\2 \1",
                                                replace_global=replace_global),
                       tf.strings.regex_replace(x, p, "#", replace_global=replace_global)]
    check_strings(fn, [WORDS, np.array("[A-Z]", object)])


# -- a text-preprocessing model --------------------------------------------------------------------
def test_text_model_lowercase_hash_embed_dense():
    """Issue 15's text model: tokens lowercased, hashed to buckets, embedded, averaged and fed
    to a dense layer; the converted model matches TF."""
    buckets, width = 50, 8
    rng = np.random.default_rng(3)
    table = tf.constant(rng.normal(size=(buckets, width)).astype(np.float32))
    kernel = tf.constant(rng.normal(size=(width, 3)).astype(np.float32))
    bias = tf.constant(rng.normal(size=(3,)).astype(np.float32))

    def model(tokens):
        ids = tf.strings.to_hash_bucket_fast(tf.strings.lower(tokens), buckets)
        pooled = tf.reduce_mean(tf.nn.embedding_lookup(table, ids), axis=1)
        return tf.nn.relu(tf.matmul(pooled, kernel) + bias)

    tokens = np.array([["The", "quick", "Brown", "fox"], ["JUMPS", "over", "the", "dog"]], object)
    graph = check_strings(model, [tokens], specs=[spec((None, 4), "string")],
                          extra_inputs=[[tokens[:1]], [np.array([["A", "b", "C", "the"]] * 3,
                                                                object)]])
    assert {"StringCase", "StringToHashBucketFast"} <= {n.op_type for n in graph.nodes}


# -- without TensorFlow: inference ----------------------------------------------------------------
def test_shapes_and_attrs_are_checked():
    from tf2ir.ir import ConversionError, Graph, TensorDesc
    from tf2ir.ir.infer import infer_graph
    g = Graph("split")
    node = g.add_node("StringSplitV2", [g.add_input("x", TensorDesc("string", (None,))),
                                        g.add_const(np.array(" ", object), "sep")],
                      {"maxsplit": -1}, "split", num_outputs=3)
    g.outputs.extend(node.outputs)
    infer_graph(g)
    assert [v.desc.shape for v in node.outputs] == [(None, 2), (None,), (2,)]
    _, node = single_op_graph("StringToHashBucketFast", [TensorDesc("string", (3, None))],
                              {"num_buckets": 9})
    assert node.outputs[0].desc.shape == (3, None)
    with pytest.raises(ConversionError, match="num_buckets"):
        single_op_graph("StringToHashBucketFast", [TensorDesc("string", (3,))], {"num_buckets": 0})
    with pytest.raises(ConversionError, match="fill"):
        single_op_graph("AsString", [TensorDesc("int32", (3,))], {"fill": "x", "width": 3})
