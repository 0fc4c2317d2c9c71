"""The layering rules of DESIGN.md, read from the source: imports go downward only
(ir ← opp ← plugins ← parser ← tools), no module imports in a circle, `ir/` outside its
ONNX backend never imports onnx, modules of the core folders stay small, the ONNX passes
write through the graph's verbs only, and ops are written one way."""

from __future__ import annotations

import ast
import os
from typing import Dict, List, Set

import networkx as nx
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAYERS = ("ir", "opp", "plugins", "parser", "tools")
SIZE_LIMIT = 450            # lines per module in ir/, opp/, plugins/, parser/, tools/
SIZE_EXEMPT: Set[str] = set()   # modules over the limit for now, each with its reason
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


# -- issue 22: the ONNX passes write through the graph's verbs only ---------------------------
PASSES_DIR = os.path.join(ROOT, "ir", "onnx", "passes")
_NODE_FIELDS = {"input", "output", "attrs", "op_type", "domain", "name"}
_MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "reverse", "sort", "update",
             "setdefault", "popitem"}
_REBUILDS = {"producers", "consumers", "toposort", "keep_only", "make_node"}


def proto_list_violations(source: str) -> List[str]:
    """What in a pass module touches NodeProto lists or node fields directly: NodeProto or
    helper.make_node, `.attribute`, assignment or deletion of a node field or a subscript of
    one (or of a graph's `nodes`), list/dict mutators called on them, use maps rebuilt by hand
    (producers()/consumers()), hand-made orders (toposort, keep_only)."""
    found = []

    def fielded(node, fields) -> bool:
        return isinstance(node, ast.Attribute) and node.attr in fields

    for node in ast.walk(ast.parse(source)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Attribute) and node.attr in ("NodeProto", "attribute"):
            found.append(f"{line}: .{node.attr}")
        elif isinstance(node, ast.Name) and node.id == "NodeProto":
            found.append(f"{line}: NodeProto")
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                if fielded(target, _NODE_FIELDS | {"nodes"}) or (
                        isinstance(target, ast.Subscript)
                        and fielded(target.value, _NODE_FIELDS | {"nodes"})):
                    found.append(f"{line}: assigns or deletes .{getattr(target, 'attr', None) or target.value.attr}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _MUTATORS and fielded(node.func.value, _NODE_FIELDS | {"nodes"}):
                found.append(f"{line}: .{node.func.value.attr}.{node.func.attr}()")
            elif node.func.attr in _REBUILDS:
                found.append(f"{line}: .{node.func.attr}()")
    return found


def test_no_onnx_pass_touches_nodeproto_lists():
    """Every ONNX pass rewrites through OnnxGraph's verbs (which keep order and use lists
    true); none builds NodeProtos, edits node fields or lists, or rebuilds use maps."""
    bad = {}
    for file in sorted(os.listdir(PASSES_DIR)):
        if file.endswith(".py"):
            problems = proto_list_violations(open(os.path.join(PASSES_DIR, file)).read())
            if problems:
                bad[file] = problems[:5]
    assert not bad, bad


def test_the_pass_rule_catches_a_hand_edit():
    source = ("def p(g):\n    for node in g:\n        node.input[0] = 'x'\n"
              "        del node.output[:]\n        node.attrs['k'] = 1\n"
              "        g.nodes[:] = []\n        users = g.consumers()\n"
              "        n = helper.make_node('Relu', ['a'], ['b'])\n        node.input.append('y')\n")
    found = proto_list_violations(source)
    assert len(found) == 7, found


# -- issue 22: one way to write an op -------------------------------------------------------
def op_style_violations(source: str) -> List[str]:
    """Raw `.emit(...)` calls (lowerings write through ctx.op) and lambdas registered directly
    as a lowering, inference, fold function or kernel (registrations decorate named defs)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "emit":
                found.append(f"{node.lineno}: .emit(...)")
            elif node.func.attr in ("lower", "infer", "fold", "kernel") \
                    and any(isinstance(a, ast.Lambda) for a in node.args):
                found.append(f"{node.lineno}: .{node.func.attr}(lambda ...)")
    return found


@pytest.mark.parametrize("folder", ["opp", os.path.join("plugins", "builtin")])
def test_ops_are_written_one_way(folder):
    bad = {}
    for file in sorted(os.listdir(os.path.join(ROOT, folder))):
        if file.endswith(".py"):
            problems = op_style_violations(open(os.path.join(ROOT, folder, file)).read())
            if problems:
                bad[file] = problems[:5]
    assert not bad, bad


def test_the_style_rule_catches_a_raw_emit_and_a_lambda():
    source = ("proto.lower(lambda ctx, node: None)\n"
              "def lower(ctx, node):\n    ctx.emit('Relu', [ctx.input(0)], [ctx.output(0)])\n")
    assert len(op_style_violations(source)) == 2
