"""`tf2ir new-plugin --native`: the package's C++ kernel builds at a plain `pip install` (pip's
isolated build, where tf2ir is not importable), its own test passes on the native path, and
only the native kernel computes the result; without a compiler it installs, says so once, and
its test passes on the Python kernel."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import run_cli
from tests.tools.test_new_plugin import run_package_tests, write_kernel

PACKAGE = "xlog_native"
STUB = "write Xlog1py's compute in xlog_native/kernels.cc"
COMPUTE = """\
    if (x.Shape() != y.Shape()) return Ort::Status("x and y differ in shape", ORT_INVALID_ARGUMENT);
    const float* a = x.Data();
    const float* b = y.Data();
    float* out = z.Allocate(x.Shape());
    for (int64_t i = 0; i < x.NumberOfElement(); ++i) out[i] = a[i] == 0.0f ? 0.0f : a[i] * std::log1p(b[i]);
    return Ort::Status(nullptr);
"""
PYTHON_KERNEL = "    return np.where(x == 0, 0, x * np.log1p(y)).astype(x.dtype)\n"
WRONG_KERNEL = "    return (x * np.log1p(y) + 1000).astype(x.dtype)   # not Xlog1py: TF never gives it\n"


def write_compute(package) -> None:
    """The author's C++: the stub's error return replaced by Xlog1py's compute."""
    kernels = package / PACKAGE / "kernels.cc"
    text = kernels.read_text()
    stub = next(line for line in text.splitlines() if STUB in line)
    kernels.write_text(text.replace(stub + "\n", COMPUTE))


@pytest.fixture(scope="module")
def scaffold(tmp_path_factory):
    root = tmp_path_factory.mktemp("native_scaffold")
    result = run_cli("new-plugin", PACKAGE, "--origin-op", "Xlog1py", "--native", "-o", str(root))
    assert result.returncode == 0, result.stderr
    package = root / PACKAGE
    assert f"{package / PACKAGE / 'kernels.cc'}" in result.stdout
    for rel in ("setup.py", "setup.cfg", "pyproject.toml", f"{PACKAGE}/kernels.cc",
                f"{PACKAGE}/plugin.py", f"tests/test_{PACKAGE}.py"):
        assert (package / rel).is_file(), rel
    return package


def install(scaffold, tmp_path_factory, name, cpp: bool, env=None):
    """A copy of the scaffold with the kernels written, pip-installed (its default, isolated
    build) into a site folder of its own; returns (package, site, pip's result)."""
    package = tmp_path_factory.mktemp(name) / PACKAGE
    shutil.copytree(scaffold, package)
    write_kernel(package / PACKAGE / "plugin.py", PYTHON_KERNEL)
    if cpp:
        write_compute(package)
    site = package.parent / "site"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-v", "--no-deps", "--target",
                          str(site), str(package)], capture_output=True, text=True, env=env)
    assert pip.returncode == 0, pip.stdout[-3000:] + pip.stderr[-3000:]
    return package, site, pip


def site_env(site):
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}


@pytest.fixture(scope="module")
def native(scaffold, tmp_path_factory):
    package, site, _ = install(scaffold, tmp_path_factory, "native", cpp=True)
    return package, site


@pytest.fixture(scope="module")
def no_compiler(scaffold, tmp_path_factory):
    env = {**os.environ, "CC": "false", "CXX": "false"}
    return install(scaffold, tmp_path_factory, "no_compiler", cpp=False, env=env)


def test_the_packages_test_passes_on_the_native_kernel(native):
    package, site = native
    assert glob.glob(str(site / PACKAGE / "_kernels*.so")), os.listdir(site / PACKAGE)
    ran = run_package_tests(package, env=site_env(site))
    assert ran.returncode == 0, ran.stdout[-3000:]
    assert "1 passed" in ran.stdout and "checked the Python kernel" not in ran.stdout


def test_only_the_native_kernel_gives_tensorflows_answer(native, freeze, tmp_path):
    """`tf2ir run` with the site on PYTHONPATH gives TF's result though the installed Python
    kernel is made wrong; with the library removed, the same run gives the wrong kernel's."""
    import tensorflow as tf
    _, site = native
    wrong = tmp_path / "site"
    shutil.copytree(site, wrong)
    plugin = wrong / PACKAGE / "plugin.py"
    plugin.write_text(plugin.read_text().replace(PYTHON_KERNEL, WRONG_KERNEL))
    assert WRONG_KERNEL in plugin.read_text()
    fn = lambda x, y: tf.math.xlog1py(x, y) * 2.0   # noqa: E731
    path, _ = freeze(fn, [tf.TensorSpec([None, 3], tf.float32, name="x"),
                          tf.TensorSpec([None, 3], tf.float32, name="y")])
    env = site_env(wrong)
    model = str(tmp_path / "m.onnx")
    converted = run_cli("convert", path, "-o", model, env=env)
    assert converted.returncode == 0, converted.stderr
    x = np.array([[0.0, 0.5, 2.0], [1.0, -0.5, 3.0]], np.float32)
    y = np.array([[5.0, 0.25, 1.0], [0.0, 2.0, 0.5]], np.float32)
    np.savez(tmp_path / "in.npz", x=x, y=y)
    expected = fn(tf.constant(x), tf.constant(y)).numpy()

    def run(out):
        ran = run_cli("run", model, "--inputs-data", str(tmp_path / "in.npz"), "-o", out, "-v", env=env)
        assert ran.returncode == 0, ran.stderr
        with np.load(out) as archive:
            (got,) = [archive[k] for k in archive.files]
        return got, ran.stderr

    got, said = run(str(tmp_path / "native.npz"))
    assert "plugin nodes: 1 native" in said and "0 by Python kernels" in said
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
    for library in glob.glob(str(wrong / PACKAGE / "_kernels*.so")):
        os.remove(library)
    got, said = run(str(tmp_path / "python.npz"))
    assert "plugin nodes: 0 native, 1 by Python kernels" in said
    assert said.count("is not built") == 1
    np.testing.assert_allclose(got, expected + 2000, rtol=1e-5)   # the wrong kernel's, × 2


def test_without_a_compiler_it_installs_says_so_once_and_runs_the_python_kernel(no_compiler):
    package, site, pip = no_compiler
    said = [line for line in (pip.stdout + pip.stderr).splitlines() if "is not built" in line]
    assert len(said) == 1 and f"the native library {PACKAGE}._kernels is not built" in said[0], said
    assert not glob.glob(str(site / PACKAGE / "_kernels*.so"))
    assert glob.glob(str(site / PACKAGE / "_kernels*.NOT_BUILT"))
    listed = run_cli("plugins", env=site_env(site))
    assert listed.returncode == 0, listed.stderr
    assert any(line.startswith(f"native library {PACKAGE}  ai.tf2ir.{PACKAGE}: Xlog1py  (not built: ")
               for line in listed.stdout.splitlines()), listed.stdout
    ran = run_package_tests(package, env=site_env(site))
    assert ran.returncode == 0, ran.stdout[-3000:]
    assert "1 passed" in ran.stdout
    assert "checked the Python kernel of Xlog1py: its native library is not built" in ran.stdout


def test_the_stubs_error_names_the_file_to_write(scaffold, tmp_path):
    """Built as it was written (setup.py build_ext --inplace, tf2ir importable), the C++ stub
    fails the run with one error naming the node, the plugin and kernels.cc."""
    package = tmp_path / PACKAGE
    shutil.copytree(scaffold, package)
    write_kernel(package / PACKAGE / "plugin.py", PYTHON_KERNEL)   # the Python side is done
    built = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
                           cwd=str(package), capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    assert glob.glob(str(package / PACKAGE / "_kernels*.so")), built.stderr
    ran = run_package_tests(package)   # not installed: the test loads plugin.py by path
    assert ran.returncode == 1
    assert "KernelError" in ran.stdout and STUB in ran.stdout
