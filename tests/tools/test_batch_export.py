"""`tf2ir batch` takes the written-model options (--opset, ...) for every model: they reach
each model's compile, count in the unchanged-model fingerprint, and bad values stop the batch
before any work."""

import os
import shutil
import subprocess
import sys

import onnx

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "sample_cnn.pb")


def _batch(*args):
    return subprocess.run([sys.executable, "-m", "tf2ir.tools.cli", "batch", *args, "-j", "1"],
                          capture_output=True, text=True)


def _opset(path):
    return {o.domain: o.version for o in onnx.load(path).opset_import}[""]


def test_batch_opset_reaches_every_model_and_counts_as_a_change(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(DATA, models / "a.pb")
    shutil.copy(DATA, models / "b.pb")
    out = tmp_path / "out"
    done = _batch(str(models), "-o", str(out), "--opset", "13", "--report", str(tmp_path / "r.json"))
    assert done.returncode == 0, done.stderr
    assert [_opset(out / n) for n in ("a.onnx", "b.onnx")] == [13, 13]
    again = _batch(str(models), "-o", str(out), "--opset", "13")
    assert again.returncode == 0 and "2 skipped" in again.stdout
    other = _batch(str(models), "-o", str(out), "--opset", "15")
    assert other.returncode == 0 and "2 ok" in other.stdout, other.stdout
    assert [_opset(out / n) for n in ("a.onnx", "b.onnx")] == [15, 15]


def test_batch_refuses_a_bad_opset_before_any_work(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(DATA, models / "a.pb")
    done = _batch(str(models), "-o", str(tmp_path / "out"), "--opset", "12")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("tf2ir: error: opset 12 is not one")
    assert not (tmp_path / "out").exists()
