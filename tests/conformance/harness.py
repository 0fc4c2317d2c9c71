"""The conformance harness: a small tf.function is frozen by TensorFlow, converted by
tf2ir (in process, through the installed plugins), run by onnxruntime and compared with
TensorFlow's own result on the same inputs.

    from tests.conformance.harness import check_op
    def test_abs(): check_op(lambda x: tf.abs(x), [rand(2, 3)])

Tolerances are per dtype (`TOLERANCES`); integer and bool outputs must match exactly.
Each conformance module declares TESTED_DTYPES = {"TFOpType": ("float32", ...)}, which
docs/ops.md lists (tools/optable.py reads it).

Three-way shape runs (issue 20): with TF2IR_CONFORMANCE_SHAPES=dims every `check_op` case runs
again with every placeholder dimension unknown, with =rank with every argument of unknown
rank inside the graph (`shape_variant`); TensorFlow's reference is the same function traced over the relaxed specs. A case whose
function TensorFlow itself cannot trace over the relaxed specs is skipped ("TF refuses"); a feed
TensorFlow's kernels refuse to run over them is not compared (the case is skipped if none runs).
`python -m tf2ir.tools.shapes3` runs the suite these ways and counts the outcomes.

Target opsets (issue 23): with TF2IR_CONFORMANCE_OPSET=N every case is compiled at opset N
(compile's `opset=`) instead of the default; a case whose op has no form at N (the one
"needs opset M or newer" error of ir/onnx/forms.py) is skipped with that line.
`python -m tf2ir.tools.opsets --conformance` runs the suite at each opset."""

from __future__ import annotations

import os
import re
import tempfile
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

RNG = np.random.default_rng(20261123)
_NO_FORM = re.compile(r"^ONNX \S+ (needs opset \d+ or newer|has no form at opset \d+)")

# dtype → (atol, rtol); floats compare |a-b| <= atol + rtol*|tf|, the rest exactly
TOLERANCES: Dict[str, tuple] = {
    "float16": (1e-2, 1e-2), "bfloat16": (5e-2, 5e-2),
    "float32": (1e-5, 1e-5), "float64": (1e-10, 1e-10),
}

_MANAGER = None

SHAPES_ENV = "TF2IR_CONFORMANCE_SHAPES"
SHAPE_MODES = ("written", "dims", "rank")
CHECK_OP_CALLS = []         # the shape mode of every check_op call so far (tools/shapes3 reads it)


OPSET_ENV = "TF2IR_CONFORMANCE_OPSET"


def target_opset() -> Optional[int]:
    """The opset this run compiles at (TF2IR_CONFORMANCE_OPSET), None for the default."""
    text = os.environ.get(OPSET_ENV, "")
    if not text:
        return None
    if not text.isdigit():
        raise ValueError(f"{OPSET_ENV}={text!r}: expected an opset number")
    return int(text)


def shape_mode() -> str:
    """The shape mode of this run: 'written' (default), 'dims' or 'rank'."""
    mode = os.environ.get(SHAPES_ENV, "") or "written"
    if mode not in SHAPE_MODES:
        raise ValueError(f"{SHAPES_ENV}={mode!r}: expected one of {', '.join(SHAPE_MODES)}")
    return mode


def relax_spec(s, mode: str):
    """TensorSpec `s` with its shape relaxed for `mode`: 'dims' every dim unknown (the rank
    kept), 'rank' the rank unknown; 'written' returns `s`."""
    import tensorflow as tf
    if mode == "written":
        return s
    rank = s.shape.rank
    shape = None if mode == "rank" or rank is None else [None] * rank
    return tf.TensorSpec(shape, s.dtype, name=s.name)


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
    from tf2ir.ir.errors import ConversionError
    from tf2ir.ir.onnx.compile import compile_to_file
    from tf2ir.parser.pipeline import convert_file
    from tf2ir.tools.models import freeze_function
    pb = os.path.join(directory, f"{name}.pb")
    outputs = freeze_function(fn, list(specs), pb)
    graph, _ = convert_file(pb, _manager(), input_shapes)
    path = os.path.join(directory, f"{name}.onnx")
    opset = target_opset()
    try:
        compile_to_file(graph, path, model_name=pb, opset=opset)
    except ConversionError as exc:
        if opset is not None and _NO_FORM.search(exc.message):
            import pytest
            pytest.skip(f"opset {opset}: {exc.message}")
        raise
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
    mode = shape_mode()
    CHECK_OP_CALLS.append(mode)
    reference, relay = tf.function(fn), (lambda feed: feed)
    if mode != "written":
        fn, specs, relay = shape_variant(fn, specs, mode)
        reference = _relaxed_reference(fn, specs, mode)
    with tempfile.TemporaryDirectory(prefix="tf2ir-conf-") as directory:
        path, _, _, _ = convert_function(fn, specs, directory, input_shapes)
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        expected_first, refused = None, []
        for feed in [arrays] + [[np.asarray(a) for a in more] for more in extra_inputs]:
            feed = relay(feed)
            try:
                expected = tf.nest.flatten(reference(*[tf.constant(a) for a in feed]))
            except tf.errors.OpError as exc:
                if mode == "written":
                    raise
                # TF's own kernels fail on the relaxed graph for this feed (an empty map_fn
                # result whose element shape is no longer known): nothing to compare with
                refused.append(type(exc).__name__)
                continue
            expected = [np.asarray(e) for e in expected]
            # Placeholders keep the spec names; a spec without a name gets TF's default.
            by_name = dict(zip([s.name or f"x{i}" for i, s in enumerate(specs)], feed))
            feeds = {n: by_name.get(n, feed[k]) for k, n in enumerate(names)}
            actual = session.run(None, feeds)
            assert len(actual) == len(expected), f"{len(actual)} outputs, TF has {len(expected)}"
            for k, (want, got) in enumerate(zip(expected, actual)):
                assert_close(want, got, atol, rtol, what=f"output {k}")
            expected_first = expected_first or expected
        if expected_first is None:
            import pytest
            pytest.skip(f"TF refuses to run the {mode}-relaxed function: {refused[0]}")
        return expected_first


def shape_variant(fn: Callable, specs: Sequence, mode: str):
    """(function, specs, feed relay) of `fn` over `specs` in shape `mode`.

    'dims': the same function over specs of the same ranks, every dim unknown.
    'rank': a graph input must have a rank (tf2ir asks for --inputs otherwise), so each
    argument `x` becomes two inputs, its values flattened (`x`, 1-D) and its shape
    (`x_shape`, int32 of unknown length), and the function reshapes them back: inside the
    graph the argument has unknown rank, for TensorFlow and tf2ir alike."""
    import tensorflow as tf
    names = [s.name or f"x{i}" for i, s in enumerate(specs)]
    if mode == "dims":
        return fn, [relax_spec(s, mode) for s in specs], lambda feed: feed

    def reshaped(*args):
        return fn(*[tf.reshape(args[2 * i], args[2 * i + 1]) for i in range(len(names))])

    relaxed = []
    for name, s in zip(names, specs):
        relaxed += [tf.TensorSpec([None], s.dtype, name=name),
                    tf.TensorSpec([None], tf.int32, name=f"{name}_shape")]

    def relay(feed):
        out = []
        for a in feed:
            a = np.asarray(a)
            out += [a.reshape(-1), np.array(a.shape, np.int32)]
        return out
    return reshaped, relaxed, relay


def relaxed(fn: Callable, specs: Sequence):
    """(function, specs, feed relay, TF reference) of a case in this run's shape mode, the case
    counted as a check_op call for tools/shapes3: the conformance helpers that run their models
    their own way (through tf2ir.InferenceSession: the string and lookup-table families) relax
    their cases with it, as check_op does."""
    import tensorflow as tf
    mode = shape_mode()
    CHECK_OP_CALLS.append(mode)
    if mode == "written":
        return fn, specs, (lambda feed: feed), tf.function(fn)
    fn, specs, relay = shape_variant(fn, specs, mode)
    return fn, specs, relay, _relaxed_reference(fn, specs, mode)


def _relaxed_reference(fn: Callable, specs: Sequence, mode: str):
    """TF's reference over the relaxed `specs`: the same function traced once over them. A
    function TF cannot trace that way (Python arithmetic on a static shape, an op whose shape
    function needs the rank) skips the case: there is nothing to compare with."""
    import pytest
    import tensorflow as tf
    try:
        concrete = tf.function(fn).get_concrete_function(*specs)
    except Exception as exc:  # noqa: BLE001 - TensorFlow's own refusal, any type
        pytest.skip(f"TF refuses the {mode}-relaxed specs: {type(exc).__name__}")
    return concrete


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


def check_exactly(fn: Callable, inputs: Sequence, specs: Sequence, extra_inputs: Sequence = (),
                  native: bool = True):
    """Convert `fn` (once: its dims stay symbolic), run it through tf2ir.InferenceSession on
    `inputs` and on each list of `extra_inputs` (`native` False: Python kernels only), and
    compare every output with TF's exactly (strings as text); returns the IR graph."""
    import gc

    import tensorflow as tf

    import tf2ir
    fn, specs, relay, reference = relaxed(fn, specs)
    with tempfile.TemporaryDirectory(prefix="tf2ir-exact-") as directory:
        path, graph, _, _ = convert_function(fn, specs, directory)
        session = tf2ir.InferenceSession(path, native=native)
        names = [i.name for i in session.get_inputs()]
        for feed in [list(inputs)] + [list(more) for more in extra_inputs]:
            feed = relay([np.asarray(a) for a in feed])
            expected = [np.asarray(e) for e in tf.nest.flatten(
                reference(*[tf.constant(a) for a in feed]))]
            by_name = dict(zip([s.name for s in specs], feed))
            actual = session.run(None, {n: by_name[n] for n in names})
            assert len(actual) == len(expected)
            for k, (want, got) in enumerate(zip(expected, actual)):
                assert_close(as_text(want), as_text(got), what=f"output {k}")
        del session
        gc.collect()
        return graph
