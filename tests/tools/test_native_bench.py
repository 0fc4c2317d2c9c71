"""A smoke run of `python -m tf2ir.tools.native_bench` at its smallest sizes: the table's shape,
the JSON's rows, and that the native session ran the plugin op natively (the library the bench
compiles) while the Python session ran every plugin node by its Python kernel."""

import json

import pytest

from tf2ir.tools import native_bench

HEADER = ("| case | size | native ms | Python kernels ms | TF ms | native/TF | Python/TF "
          "| native run: nodes native/Python | Python run: nodes native/Python "
          "| max abs diff vs TF |")


def test_smallest_run(tmp_path, capsys):
    pytest.importorskip("tensorflow")
    out = tmp_path / "bench.json"
    assert native_bench.main(["--sizes", "16", "--batches", "1", "--repeats", "2",
                              "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    result = json.loads(out.read_text())
    if not result["elementwise_library"]["library"]:
        pytest.skip(f"no C++ compiler here: {result['elementwise_library']['not_built']}")
    table = [line for line in printed.splitlines() if line.startswith("|")]
    assert table[0] == HEADER and table[1] == "|---" * 10 + "|"
    assert [line.split(" | ")[:2] for line in table[2:]] == [["| softplus", "16 values"],
                                                             ["| text", "1 batch"]]
    assert all(line.count("|") == 11 for line in table)
    softplus, text = result["rows"]
    assert (softplus["case"], softplus["size"], text["case"], text["size"]) == (
        "softplus", 16, "text", 1)
    # the bench's own library ran the op; without native libraries its Python kernel did
    assert softplus["native_run"] == {"native_nodes": 1, "python_nodes": 0}
    assert softplus["python_run"] == {"native_nodes": 0, "python_nodes": 1}
    assert "| 1/0 | 0/1 |" in table[2]
    # the text model: lowercase and hash buckets are plugin nodes, each run one way or the other
    assert sum(text["native_run"].values()) == 2 and text["native_run"]["native_nodes"] >= 1
    assert text["python_run"] == {"native_nodes": 0, "python_nodes": 2}
    for row in result["rows"]:
        assert row["max_abs_diff_vs_tf"] <= 1e-5
        assert min(row["native_ms"], row["python_ms"], row["tf_ms"]) > 0
        assert row["native_vs_tf"] == pytest.approx(row["native_ms"] / row["tf_ms"])
