"""A model whose Python-kernel string ops would be handed bytes that are not UTF-8 is refused
with one error before it runs: onnxruntime-extensions' bridge to Python kernels aborts the
whole process on such bytes (a hostile model must not be able to do that)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import numpy as np
    from onnx import TensorProto, helper
    import tf2ir
    text = [b"ok", {second!r}]
    const = helper.make_node("Constant", [], ["c"], value=helper.make_tensor(
        "c", TensorProto.STRING, [2], text))
    fold = helper.make_node("CaseFoldUTF8", ["c"], ["y"], name="fold", domain="ai.tf2ir.text")
    graph = helper.make_graph([const, fold], "g", [],
                              [helper.make_tensor_value_info("y", TensorProto.STRING, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                    helper.make_opsetid("ai.tf2ir.text", 1)])
    try:
        session = tf2ir.InferenceSession(model)
        print("ran", session.run(None, {{}})[0].tolist(), session.python_ops)
    except tf2ir.ConversionError as exc:
        print("refused:", exc)
""")


def _run(second: bytes) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SCRIPT.format(second=second)],
                          capture_output=True, text=True, timeout=300)


def test_a_string_constant_that_is_not_utf8_is_refused_not_a_crash():
    result = _run(b"\xc3(")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "refused: node 'fold', op CaseFoldUTF8: string constant 'c' holds bytes that are not " \
           "UTF-8" in result.stdout


def test_utf8_constants_run_by_the_python_kernel():
    result = _run("Straße".encode())
    assert result.returncode == 0, result.stderr[-2000:]
    assert "ran ['ok', 'strasse'] 1" in result.stdout
