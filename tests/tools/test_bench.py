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


def _row(model, ours, peer=None, tf=None, ov=None, sim=None):
    from tf2ir.tools.measure import Measure
    row = bench.Row(model, 10.0, 100, 80, 50, Measure(1.0, 100.0, True),
                    peer=Measure(5.0, 500.0, True), openvino=Measure(2.0, 200.0, True),
                    sim_removes=sim)
    row.latency = {"tf2ir": ours}
    for label, value in (("tf2onnx", peer), ("tf", tf), ("openvino", ov)):
        if value:
            row.latency[label] = value
    return row


def test_tables_have_the_peer_columns_ratios_and_geometric_means(tmp_path):
    rows = [_row("A", {"1": 8.0, "all": 4.0}, {"1": 10.0, "all": 4.0}, {"1": 20.0, "all": 8.0},
                 {"1": 6.0, "all": 3.0}, sim=0),
            _row("B", {"1": 9.0, "all": 5.0}, {"1": 10.0, "all": 4.0}, None, None, sim=2)]
    header, lines, notes = bench.conversion_table(rows)
    assert "OpenVINO s" in header and "onnxsim removes" in header
    assert lines[0][header.index("speed-up")] == "5.0x" and lines[1][-1] == "2"
    assert any("OpenVINO, geometric mean of 2: 2.0x" in n for n in notes)
    header, lines, notes = bench.latency_table(rows)
    assert lines[0][header.index("ratio 1t")] == "0.800"
    assert lines[0][header.index("tf2ir/TF 1t")] == "0.400"
    assert lines[0][header.index("OpenVINO 1t")] == "6.0"
    mean = lines[-1]
    assert mean[0] == "geometric mean" and mean[header.index("ratio 1t")] == f"{(0.8 * 0.9) ** 0.5:.3f}"
    assert mean[header.index("ratio all")] == f"{(1.0 * 1.25) ** 0.5:.3f}"
    assert notes == ["slower than tf2onnx: B (all)"]
    path = tmp_path / "bench.md"
    bench.write_markdown(rows, str(path))
    text = path.read_text()
    assert "| model | pb MB |" in text and "| latency ms | tf2ir 1t |" in text
    assert "| geometric mean |" in text and "onnxsim" in text


def test_peers_are_optional(capsys):
    assert bench.Peers.find(False) == bench.Peers()
    peers = bench.Peers.find(True)
    missing = [name for name, there in vars(peers).items() if not there]
    err = capsys.readouterr().err
    assert all(f"note: {name} is not importable" in err for name in missing)
