"""`tf2ir new-plugin` writes a package that installs, registers through the entry point,
converts a graph with its op type, and whose own test passes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import onnx
import pytest

from tests.conftest import run_cli


KERNEL = """    from statistics import NormalDist
    return np.vectorize(NormalDist().inv_cdf, otypes=[x.dtype])(x)
"""
XLOG1PY_KERNEL = "    return np.where(x == 0, 0, x * np.log1p(y)).astype(x.dtype)\n"


@pytest.fixture(scope="module")
def scaffold(tmp_path_factory):
    root = tmp_path_factory.mktemp("scaffold")
    result = run_cli("new-plugin", "ndtri_ops", "--origin-op", "Ndtri", "-o", str(root))
    assert result.returncode == 0, result.stderr
    package = root / "ndtri_ops"
    assert (package / "setup.cfg").read_text().count("ndtri_ops = ndtri_ops.plugin") == 1
    return package


@pytest.fixture(scope="module")
def installed(scaffold, tmp_path_factory):
    """The scaffold with its kernel written, as its author would, installed into a site dir."""
    import shutil
    package = tmp_path_factory.mktemp("authored") / "ndtri_ops"
    shutil.copytree(scaffold, package)
    plugin = package / "ndtri_ops" / "plugin.py"
    text = plugin.read_text()
    stub = next(line for line in text.splitlines() if "raise NotImplementedError" in line)
    plugin.write_text(text.replace(stub + "\n", KERNEL))
    test = package / "tests" / "test_ndtri_ops.py"   # the author picks inputs Ndtri accepts
    test.write_text(test.read_text().replace("np.linspace(0.25, 4.0, 8,", "np.linspace(0.05, 0.95, 8,"))
    site = package.parent / "site"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                          "--target", str(site), str(package)], capture_output=True, text=True)
    assert pip.returncode == 0, pip.stderr
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    return package, env


def test_installed_plugin_is_listed(installed):
    _, env = installed
    result = run_cli("plugins", "--json", env=env)
    assert result.returncode == 0, result.stderr
    row = next(r for r in json.loads(result.stdout) if r["origin_op_type"] == "Ndtri")
    assert row["plugin"] == "ndtri_ops" and row["ir_op_type"] == "Ndtri"
    assert row["source"].startswith("ndtri_ops 0.1.0 (")     # the installed package, named
    assert row["imply_type"] == "CUSTOM"


def test_graph_with_the_op_converts_runs_and_verifies(installed, freeze, tmp_path):
    import numpy as np
    import onnxruntime as ort
    import tensorflow as tf
    _, env = installed
    fn = lambda x: tf.math.ndtri(x) + 1.0   # noqa: E731
    path, _ = freeze(fn, tf.TensorSpec([None, 3], tf.float32, name="x"))
    assert run_cli("convert", path, "-o", str(tmp_path / "no.onnx")).returncode == 3  # not installed here
    out = str(tmp_path / "m.onnx")
    result = run_cli("convert", path, "-o", out, env=env)
    assert result.returncode == 0, result.stderr
    model = onnx.load(out)
    custom = [n for n in model.graph.node if n.op_type == "Ndtri"]
    assert len(custom) == 1 and custom[0].domain == "ai.tf2ir.ndtri_ops"
    assert "ai.tf2ir.ndtri_ops" in [o.domain for o in model.opset_import]
    with pytest.raises(Exception, match="Ndtri"):   # plain onnxruntime has no kernel for it
        ort.InferenceSession(out, providers=["CPUExecutionProvider"])
    x = np.linspace(0.05, 0.95, 12, dtype=np.float32).reshape(4, 3)
    np.save(tmp_path / "x.npy", x)
    results = str(tmp_path / "out.npz")
    ran = run_cli("run", out, "--inputs-data", f"x={tmp_path / 'x.npy'}", "-o", results, env=env)
    assert ran.returncode == 0, ran.stderr
    with np.load(results) as archive:
        (got,) = [archive[k] for k in archive.files]
    np.testing.assert_allclose(got, fn(tf.constant(x)).numpy(), rtol=1e-5, atol=1e-5)
    verified = run_cli("verify", path, "--inputs-data", f"x={tmp_path / 'x.npy'}", env=env)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_the_scaffolds_test_asks_for_the_kernel(scaffold):
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             str(scaffold / "tests")], capture_output=True, text=True,
                            cwd=str(scaffold))
    assert result.returncode == 1
    assert "KernelError: the Python kernel of ai.tf2ir.ndtri_ops:Ndtri node" in result.stdout
    assert "NotImplementedError: write Ndtri's compute in ndtri_ops/plugin.py: kernel" in result.stdout


def test_refuses_to_overwrite_and_bad_names(tmp_path):
    assert run_cli("new-plugin", "p", "--origin-op", "Ndtri", "-o", str(tmp_path)).returncode == 0
    again = run_cli("new-plugin", "p", "--origin-op", "Ndtri", "-o", str(tmp_path))
    assert again.returncode == 2 and "exists already" in again.stderr
    bad = run_cli("new-plugin", "q", "--origin-op", "not an op", "-o", str(tmp_path))
    assert bad.returncode == 2 and "not a TF op type" in bad.stderr
    taken = run_cli("new-plugin", "r", "--origin-op", "Relu", "-o", str(tmp_path))
    assert taken.returncode == 2 and "--ir-op Relu" in taken.stderr


def write_kernel(plugin, body: str) -> None:
    """Replace the stub's `raise NotImplementedError(...)` line with `body`, as the author does."""
    text = plugin.read_text()
    stub = next(line for line in text.splitlines() if "raise NotImplementedError" in line)
    plugin.write_text(text.replace(stub + "\n", body))


def run_package_tests(package, env=None):
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(package / "tests")], capture_output=True, text=True,
                          cwd=str(package.parent), env=env)


def test_a_binary_op_gets_its_two_inputs_from_tensorflows_registry(tmp_path):
    """Xlog1py (x, y → z, type attribute T) from TF's op registry: the prototype declares both
    inputs and the generated test's graph feeds both, so with the kernel written it passes."""
    result = run_cli("new-plugin", "xlog_ops", "--origin-op", "Xlog1py", "-o", str(tmp_path))
    assert result.returncode == 0, result.stderr
    package = tmp_path / "xlog_ops"
    plugin = (package / "xlog_ops" / "plugin.py").read_text()
    assert ".input('x')\n             .input('y')\n             .output('z'))" in plugin
    assert "def kernel(x, y, **attrs):" in plugin
    test = (package / "tests" / "test_xlog_ops.py").read_text()
    assert "from TensorFlow's op registry" in test and "a guess" not in test
    assert 'NODE = """name: "op" op: "Xlog1py" input: "x" input: "y"\n' \
           'attr { key: "T" value { type: DT_FLOAT } }\n' in test
    write_kernel(package / "xlog_ops" / "plugin.py", XLOG1PY_KERNEL)
    ran = run_package_tests(package)   # not installed: the test loads plugin.py by path
    assert ran.returncode == 0, ran.stdout[-3000:]
    assert "1 passed" in ran.stdout


def test_without_tensorflow_the_one_input_guess_is_said(tmp_path):
    fake = tmp_path / "no_tf"
    (fake / "tensorflow").mkdir(parents=True)
    (fake / "tensorflow" / "__init__.py").write_text("raise ImportError('no TensorFlow here')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake), os.environ.get("PYTHONPATH", "")])}
    result = run_cli("new-plugin", "guess", "--origin-op", "Xlog1py", "-o", str(tmp_path), env=env)
    assert result.returncode == 0, result.stderr
    test = (tmp_path / "guess" / "tests" / "test_guess.py").read_text()
    assert ("TensorFlow is not installed: one float32 input x and one output y are a guess; "
            "make INPUTS, NODE and the prototype's ports the op's") in test
    assert 'input: "x"\n' in test and 'input: "y"' not in test
    assert ".input('x')\n             .output('y'))" in (tmp_path / "guess" / "guess" / "plugin.py").read_text()
