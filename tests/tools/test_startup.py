"""Start-up (issue 14, part 2): a conversion imports what its graph needs, through the
generated built-in plugin index, which must be fresh."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import networkx as nx
import pytest
from tensorboard.compat.proto import graph_pb2

from tf2ir.ir.toposort import CycleError, find_cycle, lexicographic_order

from tf2ir.plugins.builtin import _index
from tf2ir.plugins.builtin_index import builtin_index
from tf2ir.plugins.manager import BUILTIN_MODULES, PLUGIN_PATH_ENV
from tf2ir.tools import plugin_index

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(ROOT, "tests", "data", "sample_cnn.pb")
BUILTIN = "tf2ir.plugins.builtin."

# Runs the command line in a fresh interpreter and reports what it imported.
PROBE = """
import json, sys
from tf2ir.tools.cli import main
status = main(sys.argv[1:])
print(json.dumps({"status": status, "modules": sorted(sys.modules)}))
"""


def imported_by(*argv: str):
    env = {k: v for k, v in os.environ.items() if k != PLUGIN_PATH_ENV}
    result = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True,
                            text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["status"] == 0, result.stderr
    return set(report["modules"])


def test_the_index_is_fresh():
    with open(plugin_index.PATH, encoding="utf-8") as f:
        current = f.read()
    assert current == plugin_index.render(), (
        "plugins/builtin/_index.py is stale: run python -m tf2ir.tools.plugin_index")
    assert builtin_index() is not None


def test_the_index_names_every_builtin_module():
    assert set(_index.ORIGIN_TYPES) == {m.rsplit(".", 1)[1] for m in BUILTIN_MODULES}
    assert "_index" not in _index.ORIGIN_TYPES


def test_converting_the_sample_imports_only_what_its_op_types_need(tmp_path):
    modules = imported_by("convert", SAMPLE, "-o", str(tmp_path / "s.onnx"), "--quiet")
    heavy = {m.split(".")[0] for m in modules} & {
        "networkx", "onnxruntime", "onnxruntime_extensions", "tensorflow", "keras"}
    assert not heavy, f"the sample's conversion imported {sorted(heavy)}"
    graph_def = graph_pb2.GraphDef()
    with open(SAMPLE, "rb") as f:
        graph_def.ParseFromString(f.read())
    needed = {m for node in graph_def.node for m in builtin_index().origin_types.get(node.op, ())}
    loaded = {m[len(BUILTIN):] for m in modules if m.startswith(BUILTIN)} - {"_index"}
    assert loaded == needed, f"imported {sorted(loaded)}; the sample's op types need {sorted(needed)}"
    assert len(loaded) < len(BUILTIN_MODULES) // 3


def test_listing_the_plugins_imports_every_builtin_module():
    modules = imported_by("plugins")
    assert {m for m in modules if m.startswith(BUILTIN)} >= set(BUILTIN_MODULES)


def test_the_order_without_networkx_is_networkx_order():
    """Graphs and passes are ordered without importing networkx, in networkx's order."""
    rng = random.Random(0)
    for size in (1, 5, 30, 200):
        nodes = list(range(size))
        rng.shuffle(nodes)
        edges = [(a, b) for a in range(size) for b in range(a + 1, size) if rng.random() < 0.1]
        edges += edges[: len(edges) // 3]   # repeated edges count once
        key = {n: rng.random() for n in nodes}.__getitem__
        dag = nx.DiGraph()
        dag.add_nodes_from(nodes)
        dag.add_edges_from(edges)
        assert lexicographic_order(nodes, edges, key) == \
            list(nx.lexicographical_topological_sort(dag, key=key))
        assert lexicographic_order(nodes, edges) == list(nx.lexicographical_topological_sort(dag))
    with pytest.raises(CycleError):
        lexicographic_order(["a", "b", "c"], [("a", "b"), ("b", "c"), ("c", "b")])
    assert find_cycle(["a", "b", "c"], [("a", "b"), ("b", "c"), ("c", "b")]) == \
        [("b", "c"), ("c", "b")]
