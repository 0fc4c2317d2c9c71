"""Peak memory (issue 14, part 2): weights are not copied needlessly between the IR and the
written file. Structural checks only; the peak figures are measured by
`python -m tf2ir.tools.measure` and reported in the issue's notes."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tracemalloc
from types import SimpleNamespace

import numpy as np
import onnx

from tf2ir.ir.onnx.compile import build_model
from tf2ir.ir.onnx.writer import _write_array, write_model
from tf2ir.parser.pipeline import convert_file

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(ROOT, "tests", "data", "sample_cnn.pb")


def test_lowered_conv_filters_view_the_ir_weights():
    """A constant filter transposed into ONNX's layout is a view of the IR constant, not a
    second copy of the weights held until the file is written."""
    graph, _ = convert_file(SAMPLE)
    consts = [v.const_value for v in graph.values() if v.const_value is not None]
    _, initializers = build_model(graph)
    filters = [(name, array) for name, array in initializers if name.endswith("filter_onnx")]
    assert filters, [name for name, _ in initializers]
    for name, array in filters:
        assert any(np.shares_memory(array, c) for c in consts), f"{name} copies its IR weights"


def test_a_transposed_view_is_written_without_a_whole_copy():
    weights = np.arange(64 * 64 * 32 * 16, dtype=np.float32).reshape(64, 64, 32, 16)
    view = weights.transpose(3, 2, 0, 1)
    out = hashlib.sha256()   # a file that keeps nothing: only what the writer makes is traced
    tracemalloc.start()
    try:
        _write_array(SimpleNamespace(write=out.update), view)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out.digest() == hashlib.sha256(np.ascontiguousarray(view).tobytes()).digest()
    assert peak < view.nbytes // 4, f"writing took {peak} bytes for a {view.nbytes}-byte view"


def test_views_and_big_endian_arrays_write_the_bytes_of_their_copies(tmp_path):
    """The written model is the one the contiguous, little-endian copies would give."""
    rng = np.random.default_rng(0)
    filt = rng.standard_normal((3, 3, 8, 4)).astype(np.float32)
    arrays = {"view": filt.transpose(3, 2, 0, 1), "big": filt.astype(">f4"),
              "big_view": filt.astype(">f4").transpose(3, 2, 0, 1),
              "column": filt[:, :, :, 0], "empty": np.zeros((4, 0), np.float32)}
    written = {}
    for label, given in (("views", arrays), ("copies", {
            k: np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")) for k, a in arrays.items()})):
        model = onnx.helper.make_model(onnx.helper.make_graph(
            [onnx.helper.make_node("Identity", ["view"], ["y"])], "g", [],
            [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [4, 8, 3, 3])]),
            opset_imports=[onnx.helper.make_opsetid("", 18)])
        model.ir_version = 9
        path = tmp_path / f"{label}.onnx"
        write_model(model, list(given.items()), str(path))
        written[label] = path.read_bytes()
    assert written["views"] == written["copies"]
    loaded = onnx.numpy_helper.to_array(
        next(t for t in onnx.load(str(tmp_path / "views.onnx")).graph.initializer
             if t.name == "big_view"))
    np.testing.assert_array_equal(loaded, filt.transpose(3, 2, 0, 1))


def test_converting_the_sample_loads_no_module_it_does_not_need(tmp_path):
    """Each module loaded stays for the whole process: OpenSSL (hashlib, ~3.5 MB, which only
    `tf2ir batch` uses), onnx's reference evaluator and scipy are not a conversion's."""
    probe = ("import json, sys\nfrom tf2ir.tools.cli import main\nstatus = main(sys.argv[1:])\n"
             "print(json.dumps({'status': status, 'modules': sorted(sys.modules)}))")
    result = subprocess.run([sys.executable, "-c", probe, "convert", SAMPLE, "-o",
                             str(tmp_path / "s.onnx"), "--quiet"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["status"] == 0
    unneeded = {"_hashlib", "hashlib", "onnx.reference", "scipy"} & set(report["modules"])
    assert not unneeded, f"converting the sample imported {sorted(unneeded)}"
