"""The type checker, as CI runs it: mypy with setup.cfg's [mypy] section checks the core
(ir/, plugins/) with `tf2ir.*` imports resolved to the sources through .typecheck/tf2ir
(a symlink to the root: package_dir is invisible to static tools)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(ROOT, "setup.cfg")


def run_mypy(*targets: str) -> Tuple[int, str]:
    """mypy with the project's configuration, run from the root (cache: .mypy_cache there);
    without targets it checks the configured packages. Returns (exit status, output)."""
    result = subprocess.run([sys.executable, "-m", "mypy", "--config-file", CONFIG, *targets],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    return result.returncode, result.stdout + result.stderr


def test_the_package_root_is_reachable_by_its_name():
    link = os.path.join(ROOT, ".typecheck", "tf2ir")
    assert os.path.islink(link) and os.path.samefile(link, ROOT)


def test_the_core_type_checks():
    status, output = run_mypy()
    assert status == 0, f"mypy reports errors in the core:\n{output}"
    checked = re.search(r"Success: no issues found in (\d+) source files", output)
    assert checked and int(checked.group(1)) > 20, output   # ir/ and plugins/ were read


def test_the_checker_follows_the_project_imports(tmp_path):
    """Not vacuous: a misuse of the IR's Graph is reported, so `tf2ir.ir.graph` resolved
    to the source (an unresolved import would make Graph `Any` and hide both errors)."""
    misuse = tmp_path / "misuse.py"
    misuse.write_text("from tf2ir.ir.graph import Graph\n"
                      "graph = Graph('g')\n"
                      "graph.add_node(42)\n"
                      "count: int = graph.nodes\n")
    status, output = run_mypy(str(misuse))
    assert status == 1, output
    assert "import-not-found" not in output and "import-untyped" not in output, output
    assert re.search(r'misuse\.py:3: error: Argument 1 to "add_node" of "Graph" has '
                     r'incompatible type "int"; expected "str"', output), output
    assert re.search(r'misuse\.py:4: error: Incompatible types in assignment \(expression has '
                     r'type "list\[Node\]", variable has type "int"\)', output), output
