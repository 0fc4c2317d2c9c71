"""`tf2ir batch`: many models in parallel; a broken one fails alone, with a report, a JUnit
file, shards, a manifest, and unchanged models skipped."""

from __future__ import annotations

import json
import os
import shutil
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from tests.conftest import run_cli, run_onnx
from tf2ir.tools.batch import (Job, Result, format_table, parse_shard,
                               shard_jobs)

SAMPLE_CNN = os.path.join(os.path.dirname(__file__), "..", "data", "sample_cnn.pb")
TINY = """node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "shape" value { shape { dim { size: -1 } dim { size: 4 } } } } }
node { name: "y" op: "Relu" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
"""
UNSUPPORTED = TINY.replace('op: "Relu"', 'op: "Dawsn"')
CRASHING_PLUGIN = """import os
from tf2ir.plugins import hookimpl, register_op

def crash(src, op):
    os._exit(7)

@hookimpl
def tf2ir_op_mappings():
    return [register_op("Relu6").framework_type("TENSORFLOW").origin_op_type("Relu6")
            .parse_params_fn(crash).with_priority(100)]
"""


@pytest.fixture
def models(tmp_path):
    """Two good models (the shipped CNN, a one-op text graph) and one broken file."""
    root = tmp_path / "models"
    root.mkdir()
    shutil.copy(SAMPLE_CNN, root / "cnn.pb")
    (root / "tiny.pbtxt").write_text(TINY)
    (root / "broken.pb").write_bytes(os.urandom(2048))
    return root


def _report(path):
    with open(path) as f:
        return {m["name"]: m for m in json.load(f)["models"]}


def test_good_models_convert_and_the_broken_one_is_reported(models, tmp_path):
    out, report, junit = tmp_path / "out", tmp_path / "r.json", tmp_path / "j.xml"
    result = run_cli("batch", str(models), "-o", str(out), "-j", "2",
                     "--report", str(report), "--junit", str(junit))
    assert result.returncode == 1, result.stderr
    assert "broken.pb" in result.stdout and "1 failed" in result.stdout   # the summary table

    x = np.random.rand(2, 32, 32, 3).astype(np.float32)
    (probs,) = run_onnx(str(out / "cnn.onnx"), {"input": x})
    assert probs.shape == (2, 10) and np.allclose(probs.sum(axis=1), 1, atol=1e-5)
    x = np.random.randn(3, 4).astype(np.float32)
    (y,) = run_onnx(str(out / "tiny.onnx"), {"x": x})
    assert np.array_equal(y, np.maximum(x, 0))
    assert not (out / "broken.onnx").exists()

    models_ = _report(report)
    assert {n: m["status"] for n, m in models_.items()} == {
        "broken.pb": "failed", "cnn.pb": "ok", "tiny.pbtxt": "ok"}
    assert "broken.pb" in models_["broken.pb"]["message"]
    assert "GraphDef" in models_["broken.pb"]["message"]

    suite = ET.parse(junit).getroot().find("testsuite")
    cases = suite.findall("testcase")
    assert sorted(c.get("name") for c in cases) == ["broken.pb", "cnn.pb", "tiny.pbtxt"]
    failures = [(c.get("name"), f) for c in cases for f in c.findall("failure")]
    assert len(failures) == 1 and failures[0][0] == "broken.pb"
    assert "GraphDef" in failures[0][1].get("message")
    assert suite.get("tests") == "3" and suite.get("failures") == "1"


def test_json_manifest_with_per_model_inputs_and_outputs(models, tmp_path):
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"models": [
        {"path": "models/cnn.pb", "inputs": ["input:1,32,32,3"],
         "outputs": ["functional_1/re_lu_1/Relu6"], "output": "cnn/first_block.onnx"},
        "models/tiny.pbtxt"]}))
    out, report = tmp_path / "out", tmp_path / "r.json"
    result = run_cli("batch", str(manifest), "-o", str(out), "-j", "2", "--report", str(report))
    assert result.returncode == 0, result.stdout + result.stderr
    assert {m["status"] for m in _report(report).values()} == {"ok"}

    import onnxruntime as ort
    session = ort.InferenceSession(str(out / "cnn" / "first_block.onnx"),
                                   providers=["CPUExecutionProvider"])
    assert session.get_inputs()[0].shape == [1, 32, 32, 3]
    assert [o.name for o in session.get_outputs()] == ["functional_1/re_lu_1/Relu6"]
    assert (out / "tiny.onnx").exists()


def test_yaml_manifest(models, tmp_path):
    pytest.importorskip("yaml")
    manifest = models / "manifest.yaml"
    manifest.write_text("- path: tiny.pbtxt\n  output: relu.onnx\n  inputs: [\"x:5,4\"]\n")
    result = run_cli("batch", str(manifest), "-o", str(tmp_path / "out"), "-q")
    assert result.returncode == 0, result.stderr
    (y,) = run_onnx(str(tmp_path / "out" / "relu.onnx"), {"x": np.ones((5, 4), np.float32)})
    assert y.shape == (5, 4)


def test_shards_cover_every_model_once(tmp_path):
    root = tmp_path / "models"
    root.mkdir()
    for i in range(5):
        (root / f"m{i}.pbtxt").write_text(TINY)
    seen = []
    for shard in ("1/3", "2/3", "3/3"):
        report = tmp_path / f"r{shard[0]}.json"
        result = run_cli("batch", str(root), "-o", str(tmp_path / "out"), "-j", "2", "-q",
                         "--shard", shard, "--report", str(report))
        assert result.returncode == 0, result.stderr
        seen += list(_report(report))
    assert sorted(seen) == [f"m{i}.pbtxt" for i in range(5)]   # all, and no overlap

    result = run_cli("batch", str(root), "-o", str(tmp_path / "out"), "--shard", "0/3")
    assert result.returncode == 2 and "1-based" in result.stderr


@pytest.mark.parametrize("total", [0, 1, 2, 5, 7, 16])
@pytest.mark.parametrize("count", [1, 2, 3, 4])
def test_shard_slices_partition_the_list(total, count):
    jobs = [Job(f"m{i}", f"m{i}.pb", f"m{i}.onnx") for i in range(total)]
    slices = [shard_jobs(jobs, index, count) for index in range(1, count + 1)]
    assert [j for s in slices for j in s] == jobs
    assert max(map(len, slices)) - min(map(len, slices)) <= 1
    assert parse_shard(f"{count}/{count}") == (count, count)


def test_unchanged_models_are_skipped_unless_forced(models, tmp_path):
    (models / "broken.pb").unlink()
    out, report = tmp_path / "out", tmp_path / "r.json"
    args = ["batch", str(models), "-o", str(out), "-j", "2", "-q", "--report", str(report)]
    assert run_cli(*args).returncode == 0
    assert (out / "cnn.onnx.tf2ir.json").exists()
    stamp = os.stat(out / "cnn.onnx").st_mtime_ns

    assert run_cli(*args).returncode == 0
    assert {n: m["status"] for n, m in _report(report).items()} == {
        "cnn.pb": "skipped", "tiny.pbtxt": "skipped"}
    assert os.stat(out / "cnn.onnx").st_mtime_ns == stamp

    (models / "tiny.pbtxt").write_text(TINY + "\n")                 # changed input bytes
    assert run_cli(*args).returncode == 0
    assert {n: m["status"] for n, m in _report(report).items()} == {
        "cnn.pb": "skipped", "tiny.pbtxt": "ok"}

    assert run_cli(*args, "--fusion", "off:all").returncode == 0     # changed options
    assert {m["status"] for m in _report(report).values()} == {"ok"}

    assert run_cli(*args, "--fusion", "off:all", "--force").returncode == 0
    assert {m["status"] for m in _report(report).values()} == {"ok"}


def test_quiet_prints_nothing_on_success(models, tmp_path):
    (models / "broken.pb").unlink()
    result = run_cli("batch", str(models), "-o", str(tmp_path / "out"), "-j", "2", "--quiet")
    assert result.returncode == 0
    assert result.stdout == "" and result.stderr == ""


def test_quiet_still_names_failures(models, tmp_path):
    result = run_cli("batch", str(models), "-o", str(tmp_path / "out"), "-j", "2", "-q")
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tf2ir: error: broken.pb: "), result.stderr


def test_only_unsupported_failures_exit_3(tmp_path):
    root = tmp_path / "models"
    root.mkdir()
    (root / "good.pbtxt").write_text(TINY)
    (root / "dawsn.pbtxt").write_text(UNSUPPORTED)
    report = tmp_path / "r.json"
    result = run_cli("batch", str(root), "-o", str(tmp_path / "out"), "-j", "2", "-q",
                     "--report", str(report))
    assert result.returncode == 3, result.stderr
    models_ = _report(report)
    assert models_["dawsn.pbtxt"]["status"] == "unsupported"
    assert "Dawsn" in models_["dawsn.pbtxt"]["message"]


def test_a_crashed_worker_does_not_stop_the_others(models, tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "crash_relu6.py").write_text(CRASHING_PLUGIN)    # the CNN's Relu6 kills its worker
    report = tmp_path / "r.json"
    result = run_cli("batch", str(models), "-o", str(tmp_path / "out"), "-j", "2", "-q",
                     "--plugin-dir", str(plugins), "--report", str(report))
    assert result.returncode == 1
    statuses = {n: (m["status"], m["message"]) for n, m in _report(report).items()}
    assert statuses["tiny.pbtxt"] == ("ok", "")
    assert statuses["cnn.pb"] == ("failed", "the worker process converting this model crashed")
    assert statuses["broken.pb"][0] == "failed"


@pytest.mark.parametrize("argv, needle", [
    (["/nonexistent/dir"], "does not exist"),
    (["{empty}"], "no .pb or .pbtxt"),
    (["{empty}", "-j", "0"], "bad -j"),
])
def test_usage_errors_are_one_line(tmp_path, argv, needle):
    (tmp_path / "empty").mkdir()
    argv = [a.format(empty=tmp_path / "empty") for a in argv]
    result = run_cli("batch", *argv, "-o", str(tmp_path / "out"))
    assert result.returncode in (1, 2)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tf2ir: error: ") and needle in lines[0]


def test_progress_bar_and_table(capsys):
    from tf2ir.tools.progress import ProgressBar
    results = [Result("a.pb", "a.pb", "a.onnx", "ok", 0.5),
               Result("b.pb", "b.pb", "b.onnx", "failed", 0.1, "boom", 1)]
    bar = ProgressBar(2, enabled=True, width=10)
    for r in results:
        bar.update(r.name, r.status == "failed")
    bar.close()
    err = capsys.readouterr().err
    assert "\r[#####.....] 1/2 failed 0  a.pb" in err and "[##########] 2/2 failed 1" in err
    assert err.endswith("\n")
    table = format_table(results).splitlines()
    assert table[0].split() == ["MODEL", "STATUS", "SECONDS", "MESSAGE"]
    assert table[2].split() == ["b.pb", "failed", "0.10", "boom"]
    assert table[-1] == "1 ok, 0 skipped, 1 failed, 0 unsupported of 2 models"
    ProgressBar(2, enabled=False).update("a.pb")      # not a terminal: silent
    assert capsys.readouterr().err == ""
