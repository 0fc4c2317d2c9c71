"""The benchmark tool on a generated graph (no TensorFlow, no peer): it converts with the
command line as a child process and reports node counts, time and peak memory."""

import json

from tf2ir.parser.load import load_graph_def
from tf2ir.tools import bench


def test_generated_ladder_has_the_asked_size_and_converts(tmp_path, capsys):
    path = bench.generate_ladder(str(tmp_path / "ladder.pb"), 602)
    assert abs(len(load_graph_def(path).node) - 602) <= 6
    report = tmp_path / "rows.json"
    status = bench.main(["--generate", "602", "--model-dir", str(tmp_path), "--repeat", "1",
                         "--no-peer", "--no-latency", "--json", str(report)])
    assert status == 0
    [row] = json.loads(report.read_text())
    assert row["model"] == "ladder602" and row["tf2ir"]["ok"]
    assert row["tf_nodes"] == len(load_graph_def(path).node)
    assert 0 < row["onnx_nodes"] < row["tf_nodes"]      # Consts become initializers
    assert row["tf2ir"]["seconds"] > 0 and row["tf2ir"]["peak_mb"] > 0
    assert "ladder602" in capsys.readouterr().out


def test_a_failing_conversion_is_a_row_and_the_status(tmp_path, capsys):
    bad = tmp_path / "bad.pb"
    bad.write_bytes(b"not a graph")
    assert bench.main([str(bad), "--model-dir", str(tmp_path), "--repeat", "1", "--no-peer",
                       "--no-latency"]) == 1
    assert "FAILED" in capsys.readouterr().out


def test_geometric_mean():
    assert abs(bench.geometric_mean([2.0, 8.0]) - 4.0) < 1e-12
