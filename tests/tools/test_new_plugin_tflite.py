"""`tf2ir new-plugin --framework tflite` writes a package mapping a TFLite op (TFLITE mapping)
that installs, registers through the entry point, and whose own test builds a .tflite with
the op and passes: against TensorFlow for a custom op, against the LiteRT interpreter for a
builtin."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import run_cli
from tests.tools.test_new_plugin import run_package_tests, write_kernel

pytest.importorskip("tensorflow")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """lite_asinh: TFLite's custom op Asinh (TFLiteConverter with allow_custom_ops keeps TF's
    Asinh so) → tf2ir's IR op Asinh, installed into a site dir."""
    root = tmp_path_factory.mktemp("scaffold_tflite")
    result = run_cli("new-plugin", "lite_asinh", "--origin-op", "Asinh", "--framework", "tflite",
                     "--ir-op", "Asinh", "-o", str(root))
    assert result.returncode == 0, result.stderr
    package = root / "lite_asinh"
    site = root / "site"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                          "--target", str(site), str(package)], capture_output=True, text=True)
    assert pip.returncode == 0, pip.stderr
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    return package, env


def test_the_package_registers_a_tflite_mapping(installed):
    package, env = installed
    plugin = (package / "lite_asinh" / "plugin.py").read_text()
    assert ("register_op('Asinh').framework_type('TFLITE').origin_op_type('Asinh')"
            in plugin)
    assert "op_prototype" not in plugin                       # tf2ir's IR op, not a new one
    assert "tf2ir plugin mapping TFLite Asinh to IR Asinh" in (package / "setup.cfg").read_text()
    test = (package / "tests" / "test_lite_asinh.py").read_text()
    assert "CUSTOM = True" in test and "return tf.raw_ops.Asinh(x=x)" in test
    listed = run_cli("plugins", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    rows = [r for r in json.loads(listed.stdout) if r.get("plugin") == "lite_asinh"]
    assert len(rows) == 1 and rows[0]["origin_op_type"].endswith("Asinh")
    assert rows[0]["ir_op_type"] == "Asinh" and rows[0]["source"].startswith("lite_asinh 0.1.0 (")
    assert rows[0].get("framework", "TFLITE") == "TFLITE"
    # TF's own Asinh stays the built-in's: the TFLITE mapping is another key.
    tf_rows = [r for r in json.loads(listed.stdout) if r.get("origin_op_type") == "Asinh"
               and r.get("framework", "TENSORFLOW") == "TENSORFLOW"]
    assert [r["plugin"] for r in tf_rows] == ["builtin_math"]


@pytest.mark.slow   # the package's test imports TF and runs TFLiteConverter (~15-25 s)
def test_the_installed_packages_test_passes(installed):
    """Found through the entry point, the package's test converts a TFLiteConverter model
    holding the custom op and compares with TensorFlow."""
    package, env = installed
    ran = run_package_tests(package, env)
    assert ran.returncode == 0, ran.stdout[-3000:]
    assert "1 passed" in ran.stdout


@pytest.mark.slow   # as above
def test_a_builtin_mapped_to_a_declared_ir_op_compares_with_the_interpreter(tmp_path):
    """FLOOR (a builtin, mapped by tf2ir too: the package asks for priority 1) to a new IR op
    MyFloor: the stub kernel fails the package's test, the author's kernel passes it against
    the LiteRT interpreter."""
    result = run_cli("new-plugin", "lite_floor", "--origin-op", "FLOOR", "--framework", "TFLITE",
                     "--ir-op", "MyFloor", "-o", str(tmp_path))
    assert result.returncode == 0, result.stderr
    package = tmp_path / "lite_floor"
    plugin = (package / "lite_floor" / "plugin.py").read_text()
    assert "op_prototype('MyFloor', \"TFLite FLOOR, mapped by lite_floor\")" in plugin
    assert "register_op('MyFloor').framework_type('TFLITE').origin_op_type('FLOOR')" in plugin
    assert ".with_priority(1)" in plugin      # over the built-in TFLITE FLOOR mapping
    test = (package / "tests" / "test_lite_floor.py").read_text()
    assert "CUSTOM = False" in test and "return tf.math.floor(x)" in test
    assert "run_tflite(path, INPUTS)" in test
    write_kernel(package / "lite_floor" / "plugin.py", "    return np.floor(x)\n")
    ran = run_package_tests(package)   # not installed: the test loads plugin.py by path
    assert ran.returncode == 0, ran.stdout[-3000:]
    assert "1 passed" in ran.stdout


def test_usage_errors(tmp_path):
    taken = run_cli("new-plugin", "sq", "--origin-op", "SQUARED_DIFFERENCE", "--framework",
                    "tflite", "-o", str(tmp_path))
    assert taken.returncode == 2 and "--ir-op SquaredDifference" in taken.stderr
    native = run_cli("new-plugin", "n", "--origin-op", "FLOOR", "--framework", "tflite",
                     "--native", "-o", str(tmp_path))
    assert native.returncode == 2 and "--native" in native.stderr
    bad = run_cli("new-plugin", "b", "--origin-op", "not an op", "--framework", "tflite",
                  "-o", str(tmp_path))
    assert bad.returncode == 2 and "not a TFLite builtin or custom op name" in bad.stderr
    unknown = run_cli("new-plugin", "u", "--origin-op", "FLOOR", "--framework", "caffe",
                      "-o", str(tmp_path))
    assert unknown.returncode == 2 and "caffe" in unknown.stderr
    assert sorted(os.listdir(tmp_path)) == []       # nothing written by a refused command
