"""Shared fixtures: frozen models built once per test session under a temp dir."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# every compile in the suite checks the ONNX graph after each pass (order, use lists, onnx's
# node checker): a pass that breaks a graph fails the test that converts it, naming the pass
os.environ.setdefault("TF2IR_CHECK_PASSES", "1")


@pytest.fixture(scope="session", autouse=True)
def builtin_prototypes():
    """Tests that build IR by hand read the default prototype table (a graph without a
    pipeline's): the default plugin manager's, made now, before any test sets
    TF2IR_PLUGIN_PATH (the built-in op families are plugins like any other)."""
    from tf2ir.plugins.manager import default_manager
    default_manager()


@pytest.fixture
def extra_prototypes():
    """extra_prototypes(proto, ...) puts prototypes in the default table (what graphs built
    by hand read) beside the installed ones for one test; the table is restored afterwards."""
    from tf2ir.ir.prototype import default_prototypes
    table = default_prototypes()
    saved = list(table.all().values())

    def install(*protos):
        table.install([p for p in saved if p.op_type not in {q.op_type for q in protos}]
                      + list(protos))
    yield install
    table.install(saved)


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="session")
def keras_app(model_dir):
    """keras_app('ResNet50') → FrozenModel, built and frozen once per session."""
    from tf2ir.tools.models import freeze_keras_application
    cache = {}

    def build(name):
        if name not in cache:
            cache[name] = freeze_keras_application(name, model_dir)
        return cache[name]
    return build


@pytest.fixture
def freeze(tmp_path):
    """freeze(fn, spec, name) → path of a frozen .pb for a tf.function over `spec`."""
    from tf2ir.tools.models import freeze_function

    def build(fn, spec, name="model"):
        path = str(tmp_path / f"{name}.pb")
        outputs = freeze_function(fn, spec, path)
        return path, outputs
    return build


def run_cli(*args, env=None):
    """Run the tf2ir command line in a fresh process; return CompletedProcess."""
    return subprocess.run([sys.executable, "-m", "tf2ir.tools.cli", *args],
                          capture_output=True, text=True, env=env)


def run_onnx(path, feeds):
    import onnxruntime as ort
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def max_abs_error(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, f"shape {a.shape} != {b.shape}"
    return float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0


def pytest_terminal_summary(terminalreporter):
    """The TFLite conformance suite's count, when it ran: how many cases matched the LiteRT
    interpreter bit-exactly, per mode, and the largest difference of the rest (quantized
    modes in quantization steps)."""
    import sys
    harness = sys.modules.get("tests.conformance.tflite_harness")
    if harness is None or not harness.RESULTS:
        return
    modes = {}
    for outcome in harness.RESULTS:
        row = modes.setdefault(outcome.mode, [0, 0, 0.0])
        row[0] += 1
        row[1] += outcome.exact
        row[2] = max(row[2], outcome.worst)
    text = "; ".join(f"{mode} {exact}/{n} bit-exact (worst {worst:.3g}"
                     f"{' steps' if mode in ('int8', 'int16') else ''})"
                     for mode, (n, exact, worst) in sorted(modes.items()))
    terminalreporter.write_line(f"TFLite conformance against the LiteRT interpreter: {text}")
