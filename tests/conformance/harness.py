"""The conformance harness: a small tf.function is frozen by TensorFlow, converted by
tf2ir (in process, through the installed plugins), run by onnxruntime and compared with
TensorFlow's own result on the same inputs.

    from tests.conformance.harness import check_op
    def test_abs(): check_op(lambda x: tf.abs(x), [rand(2, 3)])

Tolerances are per dtype (`TOLERANCES`); integer and bool outputs must match exactly.
Each conformance module declares TESTED_DTYPES = {"TFOpType": ("float32", ...)}, which
docs/ops.md lists (tools/optable.py reads it)."""

from __future__ import annotations

import os
import tempfile
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

RNG = np.random.default_rng(20261123)

# dtype → (atol, rtol); floats compare |a-b| <= atol + rtol*|tf|, the rest exactly
TOLERANCES: Dict[str, tuple] = {
    "float16": (1e-2, 1e-2), "bfloat16": (5e-2, 5e-2),
    "float32": (1e-5, 1e-5), "float64": (1e-10, 1e-10),
}

_MANAGER = None


def rand(*shape, dtype="float32", low=-2.0, high=2.0) -> np.ndarray:
    """Seeded random data: uniform floats in [low, high), integers in [low-3, high+3],
    bools half and half."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        return RNG.integers(int(low) - 3, int(high) + 4, size=shape).astype(dtype)
    return RNG.uniform(low, high, size=shape).astype(dtype)


def _manager():
    global _MANAGER
    if _MANAGER is None:
        from tf2ir.plugins.manager import PluginManager
        _MANAGER = PluginManager()
    return _MANAGER


def convert_function(fn: Callable, specs: Sequence, directory: str,
                     input_shapes: Optional[dict] = None, name: str = "op"):
    """Freeze `fn` over `specs` (tf.TensorSpec each) and convert it → (onnx path, IR graph,
    TF output names, the frozen .pb path)."""
    from tf2ir.ir.onnx.compile import compile_to_file
    from tf2ir.parser.pipeline import convert_file
    from tf2ir.tools.models import freeze_function
    pb = os.path.join(directory, f"{name}.pb")
    outputs = freeze_function(fn, list(specs), pb)
    graph, _ = convert_file(pb, _manager(), input_shapes)
    path = os.path.join(directory, f"{name}.onnx")
    compile_to_file(graph, path, model_name=pb)
    return path, graph, outputs, pb


def check_op(fn: Callable, inputs: Sequence, *, specs: Optional[Sequence] = None,
             atol: Optional[float] = None, rtol: Optional[float] = None,
             input_shapes: Optional[dict] = None, extra_inputs: Sequence[Sequence] = (),
             ) -> List[np.ndarray]:
    """Convert `fn` (a function of len(inputs) tensors) and compare onnxruntime with
    TensorFlow on `inputs` (and on each list in `extra_inputs`, same model: use it with
    `specs` holding None dims to check that unknown dims stay symbolic).

    `specs` default to each input's exact shape and dtype. Returns TF's outputs for `inputs`.
    """
    import onnxruntime as ort
    import tensorflow as tf
    arrays = [np.asarray(a) for a in inputs]
    if specs is None:
        specs = [tf.TensorSpec(a.shape, tf.as_dtype(a.dtype), name=f"x{i}")
                 for i, a in enumerate(arrays)]
    with tempfile.TemporaryDirectory(prefix="tf2ir-conf-") as directory:
        path, _, _, _ = convert_function(fn, specs, directory, input_shapes)
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        expected_first = None
        for feed in [arrays] + [[np.asarray(a) for a in more] for more in extra_inputs]:
            expected = tf.nest.flatten(tf.function(fn)(*[tf.constant(a) for a in feed]))
            expected = [np.asarray(e) for e in expected]
            # Placeholders keep the spec names; a spec without a name gets TF's default.
            by_name = dict(zip([s.name or f"x{i}" for i, s in enumerate(specs)], feed))
            feeds = {n: by_name.get(n, feed[k]) for k, n in enumerate(names)}
            actual = session.run(None, feeds)
            assert len(actual) == len(expected), f"{len(actual)} outputs, TF has {len(expected)}"
            for k, (want, got) in enumerate(zip(expected, actual)):
                assert_close(want, got, atol, rtol, what=f"output {k}")
            expected_first = expected_first or expected
        return expected_first


def single_op_graph(op_type: str, operands: Sequence, attrs: Optional[dict] = None):
    """A graph holding one `op_type` node over `operands` (arrays become constants, descs
    inputs), checked and inferred; the node's output feeds an Identity that is the graph output.
    Returns (graph, node): for inference, error and folding checks without TensorFlow."""
    from tf2ir.ir import Graph
    from tf2ir.ir.infer import infer_graph
    g = Graph(op_type)
    inputs = [g.add_const(v, f"c{i}") if isinstance(v, np.ndarray) else g.add_input(f"in{i}", v)
              for i, v in enumerate(operands)]
    node = g.add_node(op_type, inputs, attrs or {}, "op")
    g.outputs.append(g.add_node("Identity", [node.outputs[0]], {}, "out").outputs[0])
    return infer_graph(g), node


def assert_close(want: np.ndarray, got: np.ndarray, atol: Optional[float] = None,
                 rtol: Optional[float] = None, what: str = "output") -> None:
    """TF's `want` against onnxruntime's `got`: same shape and dtype, values within the
    dtype's tolerance (exact for integers and bools; NaNs must sit in the same places)."""
    want, got = np.asarray(want), np.asarray(got)
    assert want.shape == got.shape, f"{what}: shape {got.shape}, TF {want.shape}"
    assert want.dtype == got.dtype, f"{what}: dtype {got.dtype}, TF {want.dtype}"
    kind = want.dtype.name
    if kind not in TOLERANCES:
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    default_atol, default_rtol = TOLERANCES[kind]
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                               atol=default_atol if atol is None else atol,
                               rtol=default_rtol if rtol is None else rtol,
                               equal_nan=True, err_msg=what)


def as_text(array):
    """TF's bytes as str, so that string outputs compare with onnxruntime's."""
    array = np.asarray(array)
    if array.dtype == object:
        return np.vectorize(lambda b: b.decode("utf-8") if isinstance(b, bytes) else b,
                            otypes=[object])(array) if array.size else array
    return array


def spec(shape, dtype="float32", name="x0"):
    """A tf.TensorSpec for a converted function's argument `name`."""
    import tensorflow as tf
    return tf.TensorSpec(shape, tf.as_dtype(dtype), name=name)


def converted_op_types(fn, specs):
    """The IR op types left after converting and compiling `fn` (constants folded)."""
    with tempfile.TemporaryDirectory() as directory:
        _, graph, _, _ = convert_function(fn, specs, directory)
        return {node.op_type for node in graph.nodes}
