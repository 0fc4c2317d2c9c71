"""The layering rules of DESIGN.md, read from the source: imports go downward only
(ir ← opp ← plugins ← parser ← tools), no module imports in a circle, `ir/` outside its
ONNX backend never imports onnx, and modules of the core folders stay small."""

from __future__ import annotations

import ast
import os
from typing import Dict, Set

import networkx as nx
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAYERS = ("ir", "opp", "plugins", "parser", "tools")
SIZE_LIMIT = 450            # lines per module in ir/, opp/, plugins/, parser/, tools/
SIZE_EXEMPT = {             # modules over the limit for now, each with its reason
    "tf2ir.tools.passcheck",    # issue 22: rewritten with the ONNX graph API
}
SIZE_SKIPPED_FOLDERS = (os.path.join(ROOT, "tools", "report_assets") + os.sep,)   # vendored, static


def _modules() -> Dict[str, str]:
    """tf2ir module name → file, for every module of the layer folders."""
    found = {}
    for layer in LAYERS:
        for folder, dirs, files in os.walk(os.path.join(ROOT, layer)):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for file in files:
                if file.endswith(".py"):
                    rel = os.path.relpath(os.path.join(folder, file), ROOT)[:-3]
                    parts = rel.split(os.sep)
                    if parts[-1] == "__init__":
                        parts = parts[:-1]
                    found["tf2ir." + ".".join(parts)] = os.path.join(folder, file)
    return found


MODULES = _modules()


def _imports(module: str, path: str) -> Set[str]:
    """The tf2ir modules `module` imports, at the top or inside functions alike."""
    package = module if path.endswith("__init__.py") else module.rsplit(".", 1)[0]
    names: Set[str] = set()
    tree = ast.parse(open(path, encoding="utf-8").read())
    for block in ast.walk(tree):   # imports for type checkers only are not run
        if isinstance(block, ast.If) and getattr(block.test, "id", "") == "TYPE_CHECKING":
            block.body = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1]
                                + ([node.module] if node.module else []))
            # `from package import submodule` imports the submodule, not the package's names.
            subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES]
            names.update(subs or [base])
    return {n for n in names if n.startswith("tf2ir.")}


def _layer(module: str) -> str:
    return module.split(".")[1]


def _graph() -> nx.DiGraph:
    graph = nx.DiGraph()
    for module, path in MODULES.items():
        graph.add_node(module)
        for target in _imports(module, path):
            # A module importing its own package's __init__ goes through the package's names.
            if target in MODULES and target != module:
                graph.add_edge(module, target)
    return graph


def test_imports_only_go_down_the_layers():
    upward = [(a, b) for a, b in _graph().edges
              if LAYERS.index(_layer(b)) > LAYERS.index(_layer(a))]
    assert upward == [], "imports from a lower layer to a higher one"


def test_no_import_circles():
    graph = _graph()
    # A package's __init__ re-exporting its submodules is not a circle of its own.
    for module in list(graph):
        if MODULES[module].endswith("__init__.py"):
            graph.remove_edges_from([(module, t) for t in list(graph.successors(module))
                                     if t.startswith(module + ".")])
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert cycles == []


def test_the_ir_core_never_imports_onnx():
    offenders = []
    for module, path in MODULES.items():
        if _layer(module) != "ir" or module.startswith("tf2ir.ir.onnx"):
            continue
        for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
            if isinstance(node, ast.Import) and any(a.name.split(".")[0] in ("onnx", "onnxruntime")
                                                    for a in node.names):
                offenders.append(module)
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in (
                    "onnx", "onnxruntime") and not node.level:
                offenders.append(module)
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tf2ir.ir.onnx"):
                offenders.append(module)
    assert offenders == []


def _lines(path: str) -> int:
    return sum(1 for _ in open(path, encoding="utf-8"))


@pytest.mark.parametrize("layer", ["ir", "opp", "plugins", "parser", "tools"])
def test_modules_stay_small(layer):
    sized = {m: path for m, path in MODULES.items() if _layer(m) == layer
             and not path.startswith(SIZE_SKIPPED_FOLDERS)}
    big = {m: n for m, path in sized.items() if m not in SIZE_EXEMPT
           for n in [_lines(path)] if n > SIZE_LIMIT}
    assert big == {}, f"modules over {SIZE_LIMIT} lines"
    # an exempt module that is small again (or gone) leaves the list
    small = sorted(m for m in SIZE_EXEMPT if _layer(m) == layer
                   and (m not in sized or _lines(sized[m]) <= SIZE_LIMIT))
    assert small == [], "SIZE_EXEMPT lists modules within the limit"


def test_the_checker_catches_an_upward_import(tmp_path):
    """The rules above can fail: an ir module importing the plugins is reported."""
    path = tmp_path / "bad.py"
    path.write_text("from tf2ir.plugins.manager import PluginManager\n")
    assert _imports("tf2ir.ir.bad", str(path)) == {"tf2ir.plugins.manager"}
    assert LAYERS.index(_layer("tf2ir.plugins.manager")) > LAYERS.index(_layer("tf2ir.ir.bad"))
