"""Which path plugin nodes take at run time: `tf2ir run --no-native` and
`tf2ir.InferenceSession(native=False)` run the Python kernels, `-v` counts both ways, `tf2ir
plugins` lists the native libraries, and a corrupt library is one error line."""

import importlib.machinery
import json
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tests.conftest import run_cli
from tf2ir.opp import strings

WORDS = np.array(["Hello", "world", "", "tf2ir", "Ünïcode"])
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def _one_node_model(path, domain, op_type, in_type, out_type, **attrs):
    node = helper.make_node(op_type, ["x"], ["y"], name="the_node", domain=domain, **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", in_type, [None])],
                              [helper.make_tensor_value_info("y", out_type, [None])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid(domain, 1)])
    onnx.save(model, str(path))
    return str(path)


@pytest.fixture
def hash_model(tmp_path):
    """tf2ir's own native op (opp/native/fingerprint.cc) in a one-node model, and its input."""
    model = _one_node_model(tmp_path / "hash.onnx", strings.DOMAIN, "StringToHashBucketFast",
                            TensorProto.STRING, TensorProto.INT64, num_buckets=1000)
    data = tmp_path / "x.npy"
    np.save(data, WORDS)
    return model, f"x={data}"


def _builtin_library_built():
    from tf2ir.plugins.manager import default_manager
    return any(lib.plugin == "builtin_native" and lib.path
               for lib in default_manager().native_libraries)


needs_library = pytest.mark.skipif(not _builtin_library_built(),
                                   reason="tf2ir's native library was not built here")


@needs_library
def test_run_counts_native_and_no_native_runs_python_kernels(hash_model, tmp_path):
    model, data = hash_model
    native = run_cli("run", model, "--inputs-data", data, "-v", "-o", str(tmp_path / "n.npz"))
    assert native.returncode == 0, native.stderr
    assert "plugin nodes: 1 native (_kernels" in native.stderr
    assert ", 0 by Python kernels" in native.stderr
    python = run_cli("run", model, "--inputs-data", data, "-v", "--no-native",
                     "-o", str(tmp_path / "p.npz"))
    assert python.returncode == 0, python.stderr
    assert "plugin nodes: 0 native, 1 by Python kernels" in python.stderr
    got, expected = np.load(tmp_path / "n.npz")["y"], np.load(tmp_path / "p.npz")["y"]
    assert got.dtype == np.int64 and got.shape == (5,)
    np.testing.assert_array_equal(got, expected)
    quiet = run_cli("run", model, "--inputs-data", data)   # no -v: no count line
    assert quiet.returncode == 0 and "plugin nodes" not in quiet.stderr


@needs_library
def test_inference_session_native_false(hash_model):
    import tf2ir
    model, _ = hash_model
    native = tf2ir.InferenceSession(model)
    python = tf2ir.InferenceSession(model, native=False)
    assert (native.native_ops, native.python_ops) == (1, 0) and native.native_libraries
    assert (python.native_ops, python.python_ops) == (0, 1) and python.native_libraries == []
    words = WORDS.astype(object)
    np.testing.assert_array_equal(native.run(None, {"x": words})[0],
                                  python.run(None, {"x": words})[0])


def test_plugins_lists_tf2ir_native_library():
    listing = run_cli("plugins", "--json")
    assert listing.returncode == 0, listing.stderr
    rows = json.loads(listing.stdout)
    assert all(r["kind"] in ("op_mapping", "native_library") for r in rows)
    (own,) = [r for r in rows if r["kind"] == "native_library" and r["plugin"] == "builtin_native"
              and r["domain"] == strings.DOMAIN]
    assert "StringToHashBucketFast" in own["ops"]
    if own["file"]:
        assert os.path.isfile(own["file"]) and own["file"].endswith(SUFFIX)
        assert own["not_built"] is None
        where = own["file"]
    else:
        assert own["not_built"]
        where = f"not built: {own['not_built']}"
    text = run_cli("plugins")
    assert text.returncode == 0, text.stderr
    line = next(x for x in text.stdout.splitlines()
                if x.startswith("native library builtin_native") and strings.DOMAIN in x)
    assert "StringToHashBucketFast" in line and line.endswith(f"({where})")


PLUGIN = '''
import os

import numpy as np

from tf2ir.ir import op_prototype
from tf2ir.opp.shapes import same_as_input
from tf2ir.plugins import hookimpl, native_library

twice = op_prototype("Twice", "2x").input("x", ["float32"]).output("y", ["float32"])
twice.infer(same_as_input)


@twice.kernel
def twice_kernel(x):
    return x * np.float32(2)


@hookimpl
def tf2ir_op_prototypes():
    return [twice]


@hookimpl
def tf2ir_native_libraries():
    return [native_library(os.path.dirname(__file__), "bogus", "ai.test.bogus", ["Twice"])]
'''


def test_corrupt_library_is_one_error_naming_plugin_and_file(tmp_path):
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "bogus_plugin.py").write_text(PLUGIN)
    library = folder / f"bogus{SUFFIX}"
    library.write_bytes(b"\x7fELF this is not a shared library\n" * 8)
    model = _one_node_model(tmp_path / "twice.onnx", "ai.test.bogus", "Twice",
                            TensorProto.FLOAT, TensorProto.FLOAT)
    data = tmp_path / "x.npy"
    np.save(data, np.array([1.5, -2.0], np.float32))
    listing = run_cli("plugins", "--plugin-dir", str(folder))
    assert listing.returncode == 0, listing.stderr
    assert f"ai.test.bogus: Twice  ({library})" in listing.stdout

    failed = run_cli("run", model, "--inputs-data", f"x={data}", "--plugin-dir", str(folder))
    assert failed.returncode == 1
    lines = failed.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in failed.stderr, failed.stderr
    assert str(library) in lines[0] and "bogus_plugin" in lines[0]
    assert "failed to load" in lines[0]

    out = tmp_path / "out.npz"   # without native libraries the Python kernel runs it
    python = run_cli("run", model, "--inputs-data", f"x={data}", "--plugin-dir", str(folder),
                     "--no-native", "-v", "-o", str(out))
    assert python.returncode == 0, python.stderr
    assert "plugin nodes: 0 native, 1 by Python kernels" in python.stderr
    np.testing.assert_array_equal(np.load(out)["y"], np.array([3.0, -4.0], np.float32))
