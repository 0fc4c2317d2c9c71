"""Conformance of the list ops (opp/lists.py: TensorList and TF1 TensorArrayV3, lowered to ONNX
sequences) against TensorFlow: raw TensorList ops in tf.function loops, TensorArray, map_fn,
scan and foldl, TF1 TensorArrays in graph mode and in a TF1 dynamic_rnn loop."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conformance.harness import assert_close, check_op, convert_function, rand, spec
from tf2ir.ir import ConversionError, Graph, TensorDesc

tf = pytest.importorskip("tensorflow")
raw = tf.raw_ops

TESTED_DTYPES = {
    "TensorListReserve": ("float32", "int32"), "TensorListSetItem": ("float32", "int32"),
    "TensorListGetItem": ("float32",), "TensorListStack": ("float32", "int32"),
    "TensorListFromTensor": ("float32",), "TensorListLength": ("float32",),
    "TensorListElementShape": ("float32",), "TensorListPushBack": ("float32",),
    "TensorListPopBack": ("float32",), "EmptyTensorList": ("float32",),
    "TensorListGather": ("float32",), "TensorListConcatV2": ("float32",),
    "TensorListSplit": ("float32",), "TensorListScatterV2": ("float32",),
    "TensorListScatterIntoExistingList": ("float32",),
    "TensorArrayV3": ("float32",), "TensorArrayReadV3": ("float32",),
    "TensorArrayWriteV3": ("float32",), "TensorArrayGatherV3": ("float32",),
    "TensorArrayScatterV3": ("float32",), "TensorArraySizeV3": ("float32",),
    "TensorArrayConcatV3": ("float32",),
}
I32 = tf.int32


# -- TF2: TensorArray and raw TensorList ops in while loops ------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_tensor_array_grows_in_a_loop_with_a_data_dependent_count(dtype):
    """dynamic_size TensorArray: SetItem with resize; n = 0 stacks to an empty [0, 3]."""
    def fn(x, n):
        arr = tf.TensorArray(x.dtype, size=0, dynamic_size=True, element_shape=[3])

        def body(i, arr):
            return i + 1, arr.write(i, x * tf.cast(i + 1, x.dtype))
        return tf.while_loop(lambda i, a: i < n, body, [0, arr])[1].stack()

    specs = [spec((3,), dtype, "x0"), spec((), "int32", "x1")]
    check_op(fn, [rand(3, dtype=dtype), np.int32(2)], specs=specs,
             extra_inputs=[[rand(3, dtype=dtype), np.int32(5)], [rand(3, dtype=dtype), np.int32(0)]])


def test_reserved_list_set_and_read_in_a_loop_with_raw_ops():
    """TensorListReserve(n) of unknown element shape, SetItem at i, GetItem of the previous
    item, Length, and Stack with its element shape; the batch dim is dynamic."""
    def fn(x):
        n = tf.shape(x)[0]
        reserved = raw.TensorListReserve(element_shape=tf.constant(-1), num_elements=n,
                                         element_dtype=tf.float32)
        items = raw.TensorListFromTensor(tensor=x, element_shape=tf.constant([-1], I32))

        def body(i, out, acc):
            row = raw.TensorListGetItem(input_handle=items, index=i,
                                        element_shape=tf.constant([-1], I32),
                                        element_dtype=tf.float32)
            acc = acc + row
            return i + 1, raw.TensorListSetItem(input_handle=out, index=i, item=acc), acc
        _, out, acc = tf.while_loop(lambda i, o, a: i < n, body,
                                    [0, reserved, tf.zeros_like(x[0])])
        stacked = raw.TensorListStack(input_handle=out, element_shape=tf.constant([-1], I32),
                                      element_dtype=tf.float32)
        return stacked, raw.TensorListLength(input_handle=out), acc

    check_op(fn, [rand(4, 3)], specs=[spec((None, 3))], extra_inputs=[[rand(1, 3)]])


def test_push_back_and_pop_back_in_a_loop():
    def fn(x, n):
        empty = raw.EmptyTensorList(element_shape=tf.constant([2], I32), max_num_elements=-1,
                                    element_dtype=tf.float32)

        def body(i, lst):
            return i + 1, raw.TensorListPushBack(input_handle=lst, tensor=x * tf.cast(i, tf.float32))
        _, lst = tf.while_loop(lambda i, lst: i < n, body, [0, empty])
        rest, last = raw.TensorListPopBack(input_handle=lst, element_shape=tf.constant([2], I32),
                                           element_dtype=tf.float32)

        def pop(i, lst, total):   # PopBack's second output read inside a function body
            lst, item = raw.TensorListPopBack(input_handle=lst, element_shape=tf.constant([2], I32),
                                              element_dtype=tf.float32)
            return i + 1, lst, total + item
        _, left, total = tf.while_loop(lambda i, lst, t: i < n - 2, pop, [0, rest, tf.zeros([2])])
        return last, total, raw.TensorListStack(input_handle=left,
                                                element_shape=tf.constant([2], I32),
                                                element_dtype=tf.float32)

    specs = [spec((2,), "float32", "x0"), spec((), "int32", "x1")]
    check_op(fn, [rand(2), np.int32(4)], specs=specs, extra_inputs=[[rand(2), np.int32(1)]])


def test_list_of_lists_state_and_nested_loops():
    """A loop inside the body appends to a list carried by the outer loop."""
    def fn(x):
        arr = tf.TensorArray(tf.float32, size=0, dynamic_size=True, element_shape=[None])

        def outer(i, arr):
            def inner(j, arr):
                return j + 1, arr.write(arr.size(), x[:j + 1] * tf.cast(i, tf.float32))
            return i + 1, tf.while_loop(lambda j, a: j < 2, inner, [0, arr])[1]
        arr = tf.while_loop(lambda i, a: i < 2, outer, [0, arr])[1]
        return arr.concat()

    check_op(fn, [rand(3)], specs=[spec((None,))], extra_inputs=[[rand(5)]])


def test_list_made_and_stacked_inside_a_loop_body():
    def fn(x, n):
        def body(i, s):
            arr = tf.TensorArray(tf.float32, size=2).write(0, s).write(1, s * 2.0)
            return i + 1, tf.reduce_sum(arr.stack(), 0)
        return tf.while_loop(lambda i, s: i < n, body, [0, x])[1]

    specs = [spec((3,), "float32", "x0"), spec((), "int32", "x1")]
    check_op(fn, [rand(3), np.int32(2)], specs=specs, extra_inputs=[[rand(3), np.int32(0)]])


def test_list_returned_by_a_cond():
    def fn(x):
        arr = tf.TensorArray(tf.float32, size=1, dynamic_size=True, element_shape=[None])
        arr = tf.cond(tf.reduce_sum(x) > 0, lambda: arr.write(0, x).write(1, x * 2.0),
                      lambda: arr.write(0, -x))
        return arr.concat()

    check_op(fn, [np.abs(rand(3))], specs=[spec((None,))], extra_inputs=[[-np.abs(rand(2))]])


def test_uninitialized_elements_of_known_shape_read_as_zeros():
    def fn(x):
        arr = tf.TensorArray(tf.float32, size=4, element_shape=[2])
        arr = arr.write(1, x).write(3, x * 2.0)
        return arr.stack(), arr.read(0)

    check_op(fn, [rand(2)])


# -- TF2: the other TensorList ops outside loops ---------------------------------------------------
def test_gather_concat_split_scatter_and_element_shape():
    def fn(x, idx):
        lst = raw.TensorListFromTensor(tensor=x, element_shape=tf.constant([2, 3], I32))
        gathered = raw.TensorListGather(input_handle=lst, indices=idx,
                                        element_shape=tf.constant([2, 3], I32),
                                        element_dtype=tf.float32)
        cat, lengths = raw.TensorListConcatV2(input_handle=lst, element_shape=tf.constant([2, 3], I32),
                                              leading_dims=tf.zeros([0], tf.int64),
                                              element_dtype=tf.float32)
        pieces = raw.TensorListSplit(tensor=cat, element_shape=tf.constant([-1, 3], I32),
                                     lengths=tf.constant([1, 3, 2], tf.int64))
        split_back = raw.TensorListGetItem(input_handle=pieces, index=1,
                                           element_shape=tf.constant([-1, 3], I32),
                                           element_dtype=tf.float32)
        scattered = raw.TensorListScatterV2(tensor=x[:2], indices=tf.constant([2, 1]),
                                            element_shape=tf.constant([2, 3], I32),
                                            num_elements=tf.constant(4))
        grown = raw.TensorListScatterV2(tensor=x[:2], indices=tf.constant([4, 1]),
                                        element_shape=tf.constant([2, 3], I32),
                                        num_elements=tf.constant(-1))
        into = raw.TensorListScatterIntoExistingList(input_handle=lst, tensor=x[:1] + 1.0,
                                                     indices=tf.constant([2]))
        shape = raw.TensorListElementShape(input_handle=lst, shape_type=tf.int64)

        def stacked(handle):
            return raw.TensorListStack(input_handle=handle, element_shape=tf.constant([2, 3], I32),
                                       element_dtype=tf.float32)
        return gathered, cat, lengths, split_back, stacked(scattered), stacked(into), shape, \
            raw.TensorListLength(input_handle=scattered), raw.TensorListLength(input_handle=grown)

    check_op(fn, [rand(3, 2, 3), np.array([2, 0, 2], np.int32)])


def test_element_shape_is_the_one_the_list_was_made_with():
    """TF's ElementShape answers the element_shape the list was made with, not its elements'
    shape: -1 (unknown rank) and [-1, 3] for lists of [2, 3] slices (was [3] and [3, 3])."""
    def fn(x):
        made = [raw.TensorListFromTensor(tensor=x, element_shape=tf.constant(given))
                for given in (-1, [-1, 3])]
        pushed = raw.TensorListPushBack(input_handle=made[1], tensor=x[0])
        return [raw.TensorListElementShape(input_handle=h, shape_type=tf.int32)
                for h in (made[0], pushed)]

    check_op(fn, [rand(2, 2, 3)])


def test_element_shape_known_only_at_run_time_is_refused():
    def fn(x, s):
        lst = raw.TensorListReserve(element_shape=s, num_elements=2, element_dtype=tf.float32)
        lst = raw.TensorListSetItem(input_handle=lst, index=0, item=x)
        return raw.TensorListElementShape(input_handle=lst, shape_type=tf.int32)

    with pytest.raises(ConversionError, match="only known at run time"):
        check_op(fn, [rand(2, 3), np.int32([2, 3])],
                 specs=[spec((None, None)), spec((2,), "int32", name="x1")])


# -- map_fn, scan, foldl --------------------------------------------------------------------------
def test_map_fn_over_a_batch_of_variable_size():
    def fn(x):
        return tf.map_fn(lambda row: (tf.reduce_sum(row * row), tf.cast(row > 0, tf.int32)), x,
                         fn_output_signature=(tf.float32, tf.int32))

    check_op(fn, [rand(4, 3)], specs=[spec((None, 3))],
             extra_inputs=[[rand(1, 3)], [rand(0, 3)]])


def test_scan_and_foldl():
    def fn(x):
        running = tf.scan(lambda acc, row: acc * 0.5 + row, x)
        total = tf.foldl(lambda acc, row: acc + tf.reduce_max(row), x, initializer=0.0)
        return running, total

    check_op(fn, [rand(5, 2)], specs=[spec((None, 2))], extra_inputs=[[rand(2, 2)]])


# -- the representation: list dtypes, ONNX sequences, text form ------------------------------------
def test_lists_are_list_dtypes_in_ir_and_sequences_in_the_loop(tmp_path):
    import onnx
    from tf2ir.ir import text

    def fn(x):
        arr = tf.TensorArray(tf.float32, size=tf.shape(x)[0], element_shape=[3])
        return tf.while_loop(lambda i, a: i < tf.shape(x)[0],
                             lambda i, a: (i + 1, a.write(i, x[i] * 2.0)), [0, arr])[1].stack()

    path, graph, _, _ = convert_function(fn, [spec((None, 3))], str(tmp_path))
    loop = next(n for n in graph.nodes if n.op_type == "While")
    lists = [v.desc for v in loop.outputs if v.desc.dtype.startswith("list_")]
    assert [(d.dtype, d.shape) for d in lists] == [("list_float32", (3,))]
    model = onnx.load(path)
    onnx_loop = next(n for n in model.graph.node if n.op_type == "Loop")
    body = next(a.g for a in onnx_loop.attribute if a.name == "body")
    kinds = [i.type.WhichOneof("value") for i in body.input]
    assert kinds.count("sequence_type") == 1
    saved = str(tmp_path / "m.ir")
    text.save(graph, saved)
    first = open(saved).read()
    assert "list_float32[3]" in first
    text.save(text.load(saved), saved)
    assert open(saved).read() == first


def test_list_desc_of_a_hand_built_graph_compiles():
    import onnxruntime as ort
    from tf2ir.ir.infer import infer_graph
    from tf2ir.ir.onnx.compile import compile_to_model
    graph = Graph("lists")
    x = graph.add_input("x", TensorDesc("int64", (None, 2)))
    lst = graph.add_node("ListFromTensor", [x, None]).outputs[0]
    item = graph.add_node("Mul", [graph.add_node("ListGetItem", [
        lst, graph.add_const(np.int32(-1)), None]).outputs[0],
        graph.add_const(np.int64(3))]).outputs[0]
    pushed = graph.add_node("ListPushBack", [lst, item]).outputs[0]
    graph.outputs = [graph.add_node("ListStack", [pushed, None]).outputs[0]]
    infer_graph(graph)
    assert str(pushed.desc) == "list_int64[2]" and graph.outputs[0].desc.shape == (None, 2)
    session = ort.InferenceSession(compile_to_model(graph).SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    value = np.array([[1, 2], [3, 4]], np.int64)
    np.testing.assert_array_equal(session.run(None, {"x": value})[0],
                                  np.concatenate([value, value[-1:] * 3]))


# -- TF1 TensorArrayV3 -----------------------------------------------------------------------------
def _tf1_check(build, feed_sets):
    """Build a TF1 graph (control flow v1) over placeholder x, convert outputs out0.., and
    compare onnxruntime with a TF session."""
    import onnxruntime as ort
    from tf2ir.ir.onnx.compile import compile_to_model
    from tf2ir.parser.pipeline import convert_graph_def
    graph = tf.Graph()
    tf.compat.v1.disable_control_flow_v2()
    try:
        with graph.as_default():
            x = tf.compat.v1.placeholder(tf.float32, [None, None, 3], name="x")
            outputs = [tf.identity(t, name=f"out{i}").name for i, t in enumerate(build(x))]
    finally:
        tf.compat.v1.enable_control_flow_v2()
    ir, _ = convert_graph_def(graph.as_graph_def(), "tf1.pb", outputs=outputs)
    session = ort.InferenceSession(compile_to_model(ir).SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    with tf.compat.v1.Session(graph=graph) as tf_session:
        for feed in feed_sets:
            want = tf_session.run(outputs, {"x:0": feed})
            for k, (w, g) in enumerate(zip(want, session.run(None, {"x": feed}))):
                assert_close(w, g, what=f"output {k}")
    return graph.as_graph_def()


def test_tf1_tensor_array_ops_in_graph_mode():
    def build(x):
        ta = tf.TensorArray(tf.float32, size=tf.shape(x)[0], element_shape=[None, 3],
                            clear_after_read=False).unstack(x)
        tb = tf.TensorArray(tf.float32, size=0, dynamic_size=True, clear_after_read=False)
        tb = tb.write(0, ta.read(1) * 2.0).write(1, ta.read(0))
        return tb.stack(), ta.size(), tb.gather([1, 0]), ta.concat()

    graph_def = _tf1_check(build, [rand(2, 4, 3), rand(3, 1, 3)])
    assert {"TensorArrayV3", "TensorArrayScatterV3", "TensorArrayConcatV3"} <= {
        n.op for n in graph_def.node}


def test_tf1_dynamic_rnn_loop_over_tensor_arrays():
    """tf.compat.v1.nn.dynamic_rnn: a TF1 while frame reading and writing TensorArrayV3s
    (raised into a While by parser/control_flow.py); the cell is a plain tanh RNN."""
    rng = np.random.default_rng(3)
    kernel = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    recurrent = rng.uniform(-1, 1, (4, 4)).astype(np.float32)

    class Cell:   # what dynamic_rnn asks of a cell (Keras 3 has no TF1 RNNCell)
        state_size = output_size = 4

        def zero_state(self, batch, dtype):
            return tf.zeros([batch, 4], dtype)

        def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
            return self.zero_state(batch_size, dtype)

        def __call__(self, step, state):
            new = tf.tanh(tf.matmul(step, kernel) + tf.matmul(state, recurrent))
            return new, new

    def build(x):
        out, state = tf.compat.v1.nn.dynamic_rnn(Cell(), x, dtype=tf.float32)
        return out, state

    graph_def = _tf1_check(build, [rand(2, 5, 3), rand(1, 1, 3)])
    assert {"Enter", "TensorArrayReadV3", "TensorArrayWriteV3"} <= {n.op for n in graph_def.node}
