"""tools/opsets.py (issue 23): each model converted at each opset, run and compared with
TensorFlow, a table of the outcomes (the compiler's one error line where an opset cannot hold a
model); --conformance runs the conformance suite at each opset through TF2IR_CONFORMANCE_OPSET."""

from __future__ import annotations

import io
import os

import onnx
import pytest

from tf2ir.tools import opsets
from tf2ir.tools.models import freeze_function

tf = pytest.importorskip("tensorflow")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(ROOT, "tests", "data", "sample_cnn.pb")


def _rows(text: str):
    """The table's rows: model → its cells (the progress lines above it are indented)."""
    lines = [line for line in text.splitlines() if line and not line.startswith(" ")]
    header = lines.index(next(line for line in lines if line.startswith("MODEL")))
    rows = {}
    for line in lines[header + 1:]:
        name, _, rest = line.partition(" ")
        if ":" in name:             # the error lines under the table
            break
        cells = [c for c in rest.split("  ") if c.strip()]
        rows[name] = [c.strip() for c in cells]
    return lines[header].split()[1:], rows


def test_a_model_at_several_opsets_matches_tensorflow():
    out = io.StringIO()
    newest = onnx.defs.onnx_opset_version()
    assert opsets.main([SAMPLE, "--opsets", f"13,17-18,{newest}"], out=out) == 0
    columns, rows = _rows(out.getvalue())
    assert columns == ["13", "17", "18", str(newest)]
    assert list(rows) == ["sample_cnn"]
    assert all(c.startswith("ok ") and float(c.split()[1]) < 1e-4 for c in rows["sample_cnn"]), \
        out.getvalue()


def test_an_opset_that_cannot_hold_the_model_is_its_one_error_line(tmp_path):
    pb = str(tmp_path / "band.pb")
    freeze_function(lambda a, b: tf.bitwise.bitwise_and(a, b),
                    [tf.TensorSpec((3,), tf.int32, name="a"),
                     tf.TensorSpec((3,), tf.int32, name="b")], pb)
    out = io.StringIO()
    assert opsets.main([pb, "--opsets", "17-18"], out=out) == 1
    _, rows = _rows(out.getvalue())
    assert rows == {"band": ["error", "ok 0.0e+00"]}, out.getvalue()
    assert out.getvalue().rstrip().endswith(
        f"band: model {pb}, node 'BitwiseAnd', op BitwiseAnd, plugin builtin_bitwise: ONNX "
        "BitwiseAnd needs opset 18 or newer; asked for opset 17")


def test_opset_lists_and_their_refusals(capsys):
    assert opsets.parse_opsets("13-15,20, 17") == [13, 14, 15, 17, 20]
    for bad in ("13-", "x", ""):
        with pytest.raises(Exception):
            opsets.parse_opsets(bad)
    with pytest.raises(SystemExit) as info:
        opsets.main([SAMPLE, "--opsets", "12-13"], out=io.StringIO())
    assert info.value.code == 2 and "opset 12 is not one tf2ir writes" in capsys.readouterr().err


def test_the_conformance_suite_at_each_opset():
    """A selection of the suite at 13 and 18: the fused Gelu passes at both, BitwiseAnd is
    skipped at 13 (its one 'needs opset 18' line) and passes at 18."""
    out = io.StringIO()
    cases = [os.path.join("tests", "conformance", c) for c in (
        "test_opsets.py::test_gelu[False]", "test_bitwise.py::test_bitwise_binary[BitwiseAnd-int32]")]
    assert opsets.main(["--conformance", "--opsets", "13,18", "--pytest", *cases], out=out) == 0
    table = out.getvalue().splitlines()
    start = table.index(next(line for line in table if line.split()[:2] == ["OPSET", "PASSED"]))
    assert [line.split() for line in table[start + 1:]] == [
        ["13", "1", "0", "0", "1"], ["18", "2", "0", "0", "0"]], out.getvalue()
