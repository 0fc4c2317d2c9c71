"""Every user error: one line on stderr naming the place, non-zero exit, no output file."""

from __future__ import annotations

import os

import pytest

from tests.conftest import run_cli


def _assert_clean_failure(result, out, code, *needles):
    assert result.returncode == code, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("tf2ir: error: ")
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert not os.path.exists(out)
    assert not os.path.exists(out + ".tmp")


@pytest.fixture
def unsupported_pb(freeze):
    import tensorflow as tf

    def fn(x):
        a = tf.math.special.dawsn(x)          # Dawsn: no plugin
        b = tf.math.special.dawsn(x * 2.0)
        c = tf.math.xlog1py(a + b, x)         # Xlog1py: no plugin, after an unsupported op
        return tf.math.special.expint(c)      # Expint: no plugin
    path, _ = freeze(fn, tf.TensorSpec([None, 4], tf.float32, name="x"), "unsupported")
    return path


def test_missing_file(tmp_path):
    out = str(tmp_path / "o.onnx")
    _assert_clean_failure(run_cli("convert", str(tmp_path / "nope.pb"), "-o", out), out, 1,
                          "nope.pb", "does not exist")


def test_file_that_is_not_a_graph_def(tmp_path):
    bad = tmp_path / "random.pb"
    bad.write_bytes(os.urandom(4096))
    out = str(tmp_path / "o.onnx")
    _assert_clean_failure(run_cli("convert", str(bad), "-o", out), out, 1, "random.pb", "GraphDef")


def test_text_file_that_is_not_a_graph_def(tmp_path):
    bad = tmp_path / "notes.pbtxt"
    bad.write_text("this is not a graph\n")
    out = str(tmp_path / "o.onnx")
    _assert_clean_failure(run_cli("convert", str(bad), "-o", out), out, 1, "notes.pbtxt")


def test_truncated_pb(keras_app, tmp_path):
    data = open(keras_app("MobileNetV2").path, "rb").read()
    cut = tmp_path / "cut.pb"
    cut.write_bytes(data[: len(data) // 2])
    out = str(tmp_path / "o.onnx")
    _assert_clean_failure(run_cli("convert", str(cut), "-o", out), out, 1, "cut.pb", "truncated")


def test_unsupported_ops_are_listed_at_once(unsupported_pb, tmp_path):
    out = str(tmp_path / "o.onnx")
    result = run_cli("convert", unsupported_pb, "-o", out)
    _assert_clean_failure(result, out, 3, "3 unsupported op types", "Dawsn (2 nodes, e.g. '",
                          "Xlog1py (1 node, e.g. '", "Expint (1 node")


def test_unsupported_ops_do_not_leave_an_ir_file(unsupported_pb, tmp_path):
    out = str(tmp_path / "o.ir")
    _assert_clean_failure(run_cli("convert", unsupported_pb, "-o", out), out, 3, "Dawsn")
    assert not os.path.exists(out + ".weights")


def test_verbose_shows_the_traceback(tmp_path):
    result = run_cli("convert", str(tmp_path / "nope.pb"), "-o", str(tmp_path / "o.onnx"), "-v")
    assert result.returncode == 1
    assert "Traceback" in result.stderr and "does not exist" in result.stderr


@pytest.mark.parametrize("spec, needle", [("input", "bad --inputs"), ("input:1,x,3", "bad --inputs"),
                                          ("nosuch:1,2", "not a Placeholder")])
def test_bad_inputs_option(keras_app, tmp_path, spec, needle):
    out = str(tmp_path / "o.onnx")
    result = run_cli("convert", keras_app("MobileNetV2").path, "-o", out, "--inputs", spec)
    _assert_clean_failure(result, out, 2, needle)


def test_unknown_output(keras_app, tmp_path):
    out = str(tmp_path / "o.onnx")
    result = run_cli("convert", keras_app("MobileNetV2").path, "-o", out, "--outputs", "nosuch:0")
    _assert_clean_failure(result, out, 2, "nosuch")


def test_bad_ir_file(tmp_path):
    ir = tmp_path / "bad.ir"
    ir.write_text("tf2ir-ir 1\ngraph \"g\" {\n  node oops\n}\n")
    out = str(tmp_path / "o.onnx")
    _assert_clean_failure(run_cli("compile", str(ir), "-o", out), out, 1, "bad.ir, line 3")


def test_usage_errors_exit_2(tmp_path):
    result = run_cli("convert")
    assert result.returncode == 2 and "usage" in result.stderr
    result = run_cli("frobnicate")
    assert result.returncode == 2


def test_help_lists_commands_and_exit_statuses():
    result = run_cli("--help")
    assert result.returncode == 0
    for word in ("convert", "compile", "plugins", "exit status", "unsupported"):
        assert word in result.stdout
    result = run_cli("convert", "--help")
    assert result.returncode == 0 and "--inputs" in result.stdout and "--emit" in result.stdout


def test_unwritable_output(tmp_path):
    sample = os.path.join(os.path.dirname(__file__), "..", "data", "sample_cnn.pb")
    out = str(tmp_path / "no" / "such" / "dir" / "o.onnx")
    result = run_cli("convert", sample, "-o", out)   # refused before any work: a usage error
    _assert_clean_failure(result, out, 2, "o.onnx", "does not exist")


def test_input_of_unknown_rank_needs_a_shape(freeze, tmp_path):
    import numpy as np
    import onnx
    import tensorflow as tf
    from tests.conftest import run_onnx
    path, _ = freeze(lambda x: tf.nn.relu(x) * 2.0, tf.TensorSpec(None, tf.float32, name="x"))
    out = str(tmp_path / "o.onnx")
    _assert_clean_failure(run_cli("convert", path, "-o", out), out, 2, "'x'", "unknown rank",
                          "--inputs x:")
    result = run_cli("convert", path, "-o", out, "--inputs", "x:?,3")
    assert result.returncode == 0, result.stderr
    onnx.checker.check_model(out, full_check=True)
    np.testing.assert_array_equal(run_onnx(out, {"x": np.array([[-1, 2, 3]], np.float32)})[0],
                                  [[0, 4, 6]])
