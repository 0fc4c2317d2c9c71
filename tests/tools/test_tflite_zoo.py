"""The TFLite zoo tool (tools/tflite_zoo.py) on its CI model: TinyCNN (two convs and a mean)
built by TF's TFLiteConverter as float and full int8, through tf2ir, compared with the
LiteRT interpreter and timed in onnxruntime. No peers in CI."""

from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("tensorflow")
pytest.importorskip("ai_edge_litert")

from tf2ir.tools import tflite_zoo  # noqa: E402


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("tflite-zoo-models"))


def _run(tmp_path, model_dir, *extra):
    out = tmp_path / "zoo.json"
    md = tmp_path / "zoo.md"
    notes = tmp_path / "missing.md"
    status = tflite_zoo.main(["--quick", "--models", "TinyCNN", "--flavours", "float,int8",
                              "--repeats", "2", "--model-dir", model_dir, "--json", str(out),
                              "--markdown", str(md), "--missing-notes", str(notes), *extra])
    return status, json.loads(out.read_text()), md.read_text(), notes.read_text()


def test_quick_tiny_cnn_float_and_int8_convert_and_match(tmp_path, model_dir, capsys):
    status, data, md, notes = _run(tmp_path, model_dir, "--peer-python", str(tmp_path / "none"))
    assert status == 0
    assert "no peer Python" in capsys.readouterr().err
    assert data["settings"]["quick"] is True and data["settings"]["peers"] == []
    assert data["settings"]["flavours"] == ["float", "int8"] and data["settings"]["quantized"] == "exact"
    rows = {r["flavour"]: r for r in data["rows"]}
    assert list(rows) == ["float", "int8"]
    for flavour, row in rows.items():
        assert row["model"] == "TinyCNN" and row["status"] == "ok" and row["converted"], row
        assert row["missing"] == [] and row["error"] == "" and row["peers"] == {}
        assert row["convert_s"] > 0 and row["ort_ms"] > 0 and row["litert_ms"] > 0
        assert row["vs_float"] == pytest.approx(row["ort_ms"] / rows["float"]["ort_ms"], rel=1e-2)
        # the model's file exists in the cache with the ops the row counts
        assert os.path.exists(os.path.join(model_dir, f"TinyCNN.quick.{flavour}.tflite"))
    assert rows["float"]["op_types"] == {"CONV_2D": 2, "MEAN": 1}
    assert rows["float"]["tflite_ops"] == 3 and rows["float"]["steps"] is None
    assert rows["float"]["max_abs_error"] <= 1e-5
    # full int8 with float inputs/outputs: QUANTIZE in, DEQUANTIZE out; within a step
    assert rows["int8"]["op_types"] == {"CONV_2D": 2, "DEQUANTIZE": 1, "MEAN": 1, "QUANTIZE": 1}
    assert rows["int8"]["steps"] is not None and rows["int8"]["steps"] <= 1.0
    assert "| TinyCNN | int8 | 5 | ok |" in md
    assert "- TinyCNN (float): CONV_2D x2, MEAN x1; int8: DEQUANTIZE +1, QUANTIZE +1" in md
    assert "- TinyCNN int8 [ok]: missing none" in notes


def test_rows_outside_the_bounds_are_mismatches(tmp_path, model_dir):
    """The bounds are enforced: negative bounds make both rows mismatches, exit status 1."""
    status, data, md, _ = _run(tmp_path, model_dir, "--float-rtol", "-1", "--int8-steps", "-1")
    assert status == 1
    rows = {r["flavour"]: r for r in data["rows"]}
    assert rows["float"]["status"] == "mismatch" and rows["float"]["converted"]
    assert rows["float"]["error"].startswith("error ") and "spread" in rows["float"]["error"]
    assert rows["int8"]["status"] == "mismatch"
    assert rows["int8"]["error"].endswith("quantization steps from the interpreter")
    assert "- TinyCNN int8 (tf2ir): " in md


def test_missing_ops_names_the_unmapped_tflite_and_flex_ops():
    from tf2ir.plugins.manager import PluginManager
    from tf2ir.tools.tflite_zoo_run import missing_ops
    types = ["CONV_2D", "NO_SUCH_TFLITE_OP", "FlexAddV2", "FlexNoSuchTfOp"]
    assert missing_ops(types, PluginManager()) == ["NO_SUCH_TFLITE_OP", "FlexNoSuchTfOp"]


def test_unknown_model_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        tflite_zoo.main(["--models", "NoSuchNet"])
    assert exc.value.code == 2
    assert "unknown model, flavour or peer: NoSuchNet" in capsys.readouterr().err
