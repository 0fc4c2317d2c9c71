"""Formats decide layouts (DESIGN decision 8): a third-party plugin that declares NCHW data and
a filter layout by formats alone gets a correct model; a data_format attribute that is absent
or says otherwise changes nothing; a filter layout that cannot be read is refused, naming the
node, and so is channels-first data a plugin left without a format."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import max_abs_error

tf = pytest.importorskip("tensorflow")
ort = pytest.importorskip("onnxruntime")

PLUGIN = '''
from tf2ir.plugins import auto_mapping, hookimpl, register_op


def parse_conv(src, op):
    """NCHW data whatever data_format says (the graph has none, or NHWC)."""
    auto_mapping(src, op)
    op.set_input_format(0, "NCHW")
    op.set_input_format(1, {filter_format!r})
    op.set_output_format(0, "NCHW")


@hookimpl
def tf2ir_op_mappings():
    return [register_op("Conv2D").origin_op_type({origin!r}).parse_params_fn(parse_conv)
            .with_priority(10)]
'''

# The filter in TF's HWCN layout, and how a plugin may store and declare it instead.
FILTER_LAYOUTS = {"HWCN": (0, 1, 2, 3), "NCHW": (3, 2, 0, 1), "NHWC": (3, 0, 1, 2)}
TO_NCHW = (0, 3, 1, 2)


@pytest.fixture
def nhwc_conv(freeze):
    """A frozen NHWC Conv2D (strides 2, SAME, 3 -> 4 channels) and its TF reference."""
    w = np.random.RandomState(0).normal(size=(3, 3, 3, 4)).astype(np.float32)
    path, _ = freeze(lambda x: tf.nn.conv2d(x, w, [1, 2, 2, 1], "SAME"),
                     tf.TensorSpec([None, 8, 8, 3], tf.float32, name="x"))
    x = np.random.RandomState(1).normal(size=(2, 8, 8, 3)).astype(np.float32)
    expected = tf.nn.conv2d(x, w, [1, 2, 2, 1], "SAME").numpy()
    return path, w, x, expected


def as_nchw_graph(path, w, op_type, data_format, filter_layout="HWCN"):
    """The frozen graph rewritten by hand into NCHW data: the input's shape and the strides
    permuted, the conv's op type and data_format as given (None: no attribute), its filter
    stored in `filter_layout`."""
    from tf2ir.parser.load import load_graph_def
    graph = load_graph_def(path)
    for node in graph.node:
        if node.op == "Placeholder":
            dims = node.attr["shape"].shape.dim
            sizes = [d.size for d in dims]
            for d, p in zip(dims, TO_NCHW):
                d.size = sizes[p]
        if node.op == "Conv2D":
            conv = node
    conv.op = op_type
    for key in ("strides", "dilations"):
        values = list(conv.attr[key].list.i)
        del conv.attr[key].list.i[:]
        conv.attr[key].list.i.extend(values[p] for p in TO_NCHW)
    del conv.attr["data_format"]
    if data_format is not None:
        conv.attr["data_format"].s = data_format.encode()
    stored = np.ascontiguousarray(w.transpose(FILTER_LAYOUTS[filter_layout]))
    filter_node = next(n for n in graph.node if n.name == conv.input[1])
    filter_node.attr["value"].tensor.ParseFromString(tf.make_tensor_proto(stored).SerializeToString())
    return graph


def convert_with_plugin(tmp_path, graph, origin, filter_format="HWCN"):
    """Convert `graph` with the third-party plugin above (mapping `origin` to Conv2D) and
    compile it: the ONNX model."""
    from tf2ir.ir.onnx.compile import compile_to_model
    from tf2ir.parser.pipeline import convert_graph_def
    from tf2ir.plugins.manager import PluginManager
    folder = tmp_path / "plugins"
    folder.mkdir(exist_ok=True)
    (folder / "nchw_conv.py").write_text(PLUGIN.format(filter_format=filter_format, origin=origin))
    manager = PluginManager(plugin_dirs=[str(folder)], use_env=False)
    ir, _ = convert_graph_def(graph, "nchw.pb", manager=manager)
    return ir, compile_to_model(ir)


def run(model, x):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


@pytest.mark.parametrize("filter_layout", sorted(FILTER_LAYOUTS))
def test_third_party_op_declares_nchw_by_formats_only(nhwc_conv, tmp_path, filter_layout):
    """A TF op of a third party's (no data_format attribute) mapped to Conv2D, NCHW data by
    formats; its filter stored and declared HWCN, NCHW (OIHW) or NHWC (OHWI)."""
    path, w, x, expected = nhwc_conv
    graph = as_nchw_graph(path, w, "NchwConv", None, filter_layout)
    ir, model = convert_with_plugin(tmp_path, graph, "NchwConv", filter_layout)
    conv = next(n for n in ir.nodes if n.op_type == "Conv2D")
    assert "data_format" not in conv.attrs
    assert (conv.inputs[0].desc.format, conv.inputs[1].desc.format) == ("NCHW", filter_layout)
    assert conv.outputs[0].desc.shape == (None, 4, 4, 4)
    got = run(model, x.transpose(TO_NCHW))
    assert max_abs_error(got, expected.transpose(TO_NCHW)) <= 1e-4


def test_formats_win_over_a_contradicting_data_format(nhwc_conv, tmp_path):
    """TF's own Conv2D, overridden: the graph's data_format says NHWC, the data is NCHW and
    the plugin says so by formats."""
    path, w, x, expected = nhwc_conv
    graph = as_nchw_graph(path, w, "Conv2D", "NHWC")
    ir, model = convert_with_plugin(tmp_path, graph, "Conv2D")
    conv = next(n for n in ir.nodes if n.op_type == "Conv2D")
    assert conv.attrs["data_format"] == "NHWC" and conv.inputs[0].desc.format == "NCHW"
    got = run(model, x.transpose(TO_NCHW))
    assert max_abs_error(got, expected.transpose(TO_NCHW)) <= 1e-4


@pytest.mark.parametrize("filter_format", ["NDHWC", "DHWCN"])
def test_a_filter_layout_of_another_rank_is_refused(nhwc_conv, tmp_path, filter_format):
    from tf2ir.ir import ConversionError
    path, w, _, _ = nhwc_conv
    graph = as_nchw_graph(path, w, "NchwConv", None)
    with pytest.raises(ConversionError) as info:
        convert_with_plugin(tmp_path, graph, "NchwConv", filter_format)
    text = str(info.value)
    assert "node 'Conv2D'" in text and f"format {filter_format}" in text, text
    assert "nchw_conv.py" in text, text            # the plugin is named too


def test_channels_first_data_without_a_format_is_refused(nhwc_conv, tmp_path):
    """A plugin that leaves the layout to TF's data_format attribute (auto mapping alone) is
    told to declare it: the attribute is never read as the layout."""
    from tf2ir.ir import ConversionError
    from tf2ir.parser.pipeline import convert_graph_def
    from tf2ir.plugins.manager import PluginManager
    path, w, _, _ = nhwc_conv
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "attr_only.py").write_text(
        "from tf2ir.plugins import hookimpl, register_op\n\n\n@hookimpl\ndef tf2ir_op_mappings():\n"
        "    return [register_op('Conv2D').origin_op_type('Conv2D').with_priority(10)]\n")
    manager = PluginManager(plugin_dirs=[str(folder)], use_env=False)
    with pytest.raises(ConversionError) as info:
        convert_graph_def(as_nchw_graph(path, w, "Conv2D", "NCHW"), "nchw.pb", manager=manager)
    text = str(info.value)
    assert "node 'Conv2D'" in text and "data_format says NCHW" in text, text
    assert "set_input_format(0, 'NCHW')" in text, text
