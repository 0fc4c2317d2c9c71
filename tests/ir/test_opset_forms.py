"""ONNX forms per opset (issue 22): canonical models (the form every lowering writes: opset 18's
op versions, Gelu's of 20) rewritten node by node into every target opset from 13 to the newest
the installed onnx and onnxruntime share pass onnx's full check and compute what the canonical
model does; what a target cannot hold is one error line; a lowering's forms are chosen by opset."""

from __future__ import annotations

from typing import Dict, List, Optional

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.ir.onnx import forms
from tf2ir.ir.prototype import op_prototype

TARGETS = list(range(forms.OLDEST_OPSET, forms.newest_runnable_opset() + 1))
F = TensorProto.FLOAT
RNG = np.random.default_rng(22)


def _info(name, dims, elem=F):
    return helper.make_tensor_value_info(name, elem, dims)


def model_at(nodes, inputs, outputs, inits: Dict[str, np.ndarray], opset: int) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs,
                              [numpy_helper.from_array(a, n) for n, a in inits.items()])
    ids = [helper.make_opsetid("", opset)]
    model = helper.make_model(graph, opset_imports=ids,
                              ir_version=max(8, helper.find_min_ir_version_for(ids)))
    if any(not o.type.tensor_type.HasField("shape") for o in outputs):
        model = onnx.shape_inference.infer_shapes(model, strict_mode=True)   # the outputs' types
        del model.graph.value_info[:]
    return model


def adapted(model: onnx.ModelProto, target: int) -> onnx.ModelProto:
    """`model` with every node rewritten by forms.expand into opset `target`."""
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    taken = {o for n in model.graph.node for o in n.output} | set(inits)

    def fresh(hint: str) -> str:
        name, i = hint, 0
        while name in taken:
            i += 1
            name = f"{hint}_{i}"
        taken.add(name)
        return name

    def fresh_const(array: np.ndarray) -> str:
        name = fresh("c")
        inits[name] = np.asarray(array)
        return name
    nodes = []
    for node in model.graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        attrs = {k: v.decode() if isinstance(v, bytes) else v for k, v in attrs.items()}
        for op_type, domain, ins, outs, new_attrs in forms.expand(
                node.op_type, node.domain, list(node.input), list(node.output), attrs, target,
                inits.get, fresh_const, fresh):
            nodes.append(helper.make_node(op_type, ins, outs, domain=domain or None, **new_attrs))
    return model_at(nodes, list(model.graph.input), list(model.graph.output), inits, target)


def run(model: onnx.ModelProto, feeds) -> List[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def check_every_target(model: onnx.ModelProto, feeds, fails: Optional[Dict[int, str]] = None,
                       tol: float = 1e-5) -> None:
    """The adapted model at every target passes the full check and gives `model`'s outputs;
    at the targets of `fails` the one-line error (exit status FAILED) holding its text comes instead."""
    onnx.checker.check_model(model, full_check=True)
    expected = run(model, feeds)
    fails = fails or {}
    for target in TARGETS:
        if target in fails:
            with pytest.raises(ConversionError) as info:
                adapted(model, target)
            line = str(info.value)
            assert "\n" not in line and fails[target] in line and f"opset {target}" in line, line
            assert info.value.exit_code == ExitStatus.FAILED
            continue
        new = adapted(model, target)
        assert [o.version for o in new.opset_import] == [target]
        onnx.checker.check_model(new, full_check=True)
        for got, want in zip(run(new, feeds), expected):
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=f"opset {target}")


def below(opset: int, text: str) -> Dict[int, str]:
    return {t: text for t in TARGETS if t < opset}


def test_the_targets_reach_the_newest_opset_onnx_and_onnxruntime_share():
    newest = forms.newest_runnable_opset()
    assert forms.OLDEST_OPSET == 13 and 20 <= newest <= onnx.defs.onnx_opset_version()
    assert forms._runtime_loads(newest) and not forms._kernel_gaps(newest)
    # onnxruntime refuses a model of an opset onnx defines beyond that one (when there is one)
    if newest < onnx.defs.onnx_opset_version():
        assert not forms._runtime_loads(newest + 1) or forms._kernel_gaps(newest + 1)
    with pytest.raises(ConversionError, match="opset 12 is not a target") as info:
        forms.adapt("Relu", "", ["x"], {}, 12, lambda n: None, lambda a: "c")
    assert info.value.exit_code == ExitStatus.USAGE


REDUCE = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
          "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"]


def test_every_reduce_op_with_constant_axes():
    nodes = [helper.make_node(op, ["x", "axes"], [f"y{i}"], keepdims=i % 2)
             for i, op in enumerate(REDUCE)]
    nodes.append(helper.make_node("ReduceMax", ["x"], ["whole"], keepdims=0))
    nodes.append(helper.make_node("ReduceMean", ["x"], ["kept"], noop_with_empty_axes=1))
    nodes.append(helper.make_node("ReduceSum", ["x", "none"], ["all"], keepdims=1))
    outputs = [_info(f"y{i}", None) for i in range(len(REDUCE))]
    outputs += [_info("whole", None), _info("kept", None), _info("all", None)]
    inits = {"axes": np.array([1, -1], np.int64), "none": np.zeros(0, np.int64)}
    model = model_at(nodes, [_info("x", [2, 3, 4])], outputs, inits, 18)
    x = RNG.uniform(0.5, 1.5, (2, 3, 4)).astype(np.float32)
    check_every_target(model, {"x": x})
    # below 18 the axes are an attribute: the node there, and ReduceSum's input kept
    op, ins, attrs = forms.adapt("ReduceL2", "", ["x", "axes"], {"keepdims": 0}, 17, inits.get,
                                 lambda a: "c")
    assert (op, ins, attrs) == ("ReduceL2", ["x"], {"axes": [1, -1], "keepdims": 0})
    assert forms.adapt("ReduceSum", "", ["x", "axes"], {}, 13, inits.get, None)[1] == ["x", "axes"]
    assert forms.adapt("ReduceMean", "", ["x"], {"noop_with_empty_axes": 1}, 13, inits.get,
                       None) == ("Identity", ["x"], {})


def test_reduce_axes_computed_at_run_time_have_no_form_before_18():
    node = helper.make_node("ReduceMean", ["x", "axes"], ["y"])
    model = model_at([node], [_info("x", [2, 3]), _info("axes", [1], TensorProto.INT64)],
                     [_info("y", ["a", "b"])], {}, 18)
    feeds = {"x": np.ones((2, 3), np.float32), "axes": np.array([1], np.int64)}
    check_every_target(model, feeds, below(18, "ONNX ReduceMean needs opset 18 or newer; asked for"))


def test_split_by_its_output_count():
    node = helper.make_node("Split", ["x"], ["a", "b"], axis=1, num_outputs=2)
    sized = helper.make_node("Split", ["x", "sizes"], ["c", "d"], axis=1)
    model = model_at([node, sized], [_info("x", [2, 4, 3])],
                     [_info(n, None) for n in "abcd"], {"sizes": np.array([1, 3], np.int64)}, 18)
    check_every_target(model, {"x": RNG.normal(size=(2, 4, 3)).astype(np.float32)})


def test_resize_and_its_attributes_of_18():
    scales = {"roi": np.zeros(0, np.float32), "s": np.array([1, 1, 2, 3], np.float32),
              "two": np.array([2, 3], np.float32)}
    plain = helper.make_node("Resize", ["x", "roi", "s"], ["y"], mode="linear", antialias=0,
                             keep_aspect_ratio_policy="stretch")
    near = helper.make_node("Resize", ["x", "", "s"], ["z"], mode="nearest",
                            coordinate_transformation_mode="asymmetric")
    model = model_at([plain, near], [_info("x", [1, 2, 3, 4])], [_info("y", None),
                                                                 _info("z", None)], scales, 18)
    x = RNG.normal(size=(1, 2, 3, 4)).astype(np.float32)
    check_every_target(model, {"x": x})
    # contiguous axes (18) become scales or sizes of every dim below 18: the others keep theirs
    sizes = {**scales, "hw": np.array([5, 7], np.int64)}
    for inputs in (["x", "", "two"], ["x", "", "", "hw"]):
        node = helper.make_node("Resize", inputs, ["y"], mode="linear", axes=[2, 3])
        model = model_at([node], [_info("x", [1, 2, 3, 4])], [_info("y", None)], sizes, 18)
        check_every_target(model, {"x": x}, tol=1e-4)
    for attrs, needle in (({"axes": [1, 3]}, "attribute axes is newer"),
                          ({"antialias": 1}, "attribute antialias=1 is newer")):
        node = helper.make_node("Resize", ["x", "", "two" if "axes" in attrs else "s"], ["y"],
                                mode="nearest" if "axes" in attrs else "linear", **attrs)
        model = model_at([node], [_info("x", [1, 2, 3, 4])], [_info("y", None)], scales, 18)
        check_every_target(model, {"x": x}, below(18, needle), tol=1e-4)


def test_pad_with_and_without_axes():
    inits = {"pads": np.array([0, 1, 2, 0, 2, 1], np.int64), "v": np.array(1.5, np.float32),
             "p2": np.array([1, 2], np.int64), "ax": np.array([-1], np.int64)}
    plain = helper.make_node("Pad", ["x", "pads", "v"], ["y"])
    edge = helper.make_node("Pad", ["x", "pads"], ["z"], mode="edge")
    model = model_at([plain, edge], [_info("x", [2, 3, 4])], [_info("y", None),
                                                              _info("z", None)], inits, 18)
    x = RNG.normal(size=(2, 3, 4)).astype(np.float32)
    check_every_target(model, {"x": x})
    by_axes = helper.make_node("Pad", ["x", "p2", "", "ax"], ["y"])
    model = model_at([by_axes], [_info("x", [2, 3, 4])], [_info("y", None)], inits, 18)
    check_every_target(model, {"x": x}, below(18, "ONNX Pad needs opset 18 or newer; asked for"))


@pytest.mark.parametrize("op", ["ScatterElements", "ScatterND"])
def test_scatter_reductions(op):
    indices = np.array([[1, 0], [0, 1]], np.int64) if op == "ScatterND" else np.array([[1], [0]], np.int64)
    updates = np.array([5.0, 7.0], np.float32) if op == "ScatterND" else \
        np.array([[5.0], [7.0]], np.float32)
    x = RNG.normal(size=(2, 2)).astype(np.float32)
    for reduction, since in (("none", 13), ("add", 16), ("mul", 16), ("max", 18), ("min", 18)):
        node = helper.make_node(op, ["x", "i", "u"], ["y"], reduction=reduction)
        model = model_at([node], [_info("x", [2, 2])], [_info("y", None)],
                         {"i": indices, "u": updates}, 18)
        check_every_target(model, {"x": x}, below(since, f"needs opset {since} or newer; asked for"))


def test_layer_normalization_is_written_out_before_17():
    inits = {"g": RNG.normal(size=(4,)).astype(np.float32),
             "b": RNG.normal(size=(4,)).astype(np.float32)}
    with_bias = helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1,
                                 epsilon=1e-3)
    no_bias = helper.make_node("LayerNormalization", ["x", "g"], ["z"], axis=-1)
    model = model_at([with_bias, no_bias], [_info("x", [2, 3, 4])],
                     [_info("y", None), _info("z", None)], inits, 18)
    check_every_target(model, {"x": RNG.normal(size=(2, 3, 4)).astype(np.float32)}, tol=1e-4)
    # one node cannot hold it; an axis counted from the front needs the rank
    with pytest.raises(ConversionError, match="LayerNormalization has no form at opset 16"):
        forms.adapt("LayerNormalization", "", ["x", "g"], {"axis": -1}, 16, inits.get,
                    lambda a: "c")
    front = helper.make_node("LayerNormalization", ["x", "g"], ["y"], axis=2)
    model = model_at([front], [_info("x", [2, 3, 4])], [_info("y", None)], inits, 18)
    check_every_target(model, {"x": RNG.normal(size=(2, 3, 4)).astype(np.float32)},
                       below(17, "axis 2 counts from the front"), tol=1e-4)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_is_written_out_before_20(approximate):
    """Canonical at 20; from 15 to 19 its formula with CastLike constants; 13 and 14 have
    neither Gelu nor CastLike, and the node alone does not give its dtype: it needs 15."""
    node = helper.make_node("Gelu", ["x"], ["y"], approximate=approximate)
    model = model_at([node], [_info("x", [3, 5])], [_info("y", None)], {}, 20)
    x = RNG.normal(size=(3, 5)).astype(np.float32) * 3
    check_every_target(model, {"x": x}, below(15, "ONNX Gelu needs opset 15 or newer"), tol=1e-5)


def test_ops_newer_than_the_target():
    x = RNG.normal(size=(2, 6)).astype(np.float32)
    for op, since, decomposed in (("Mish", 18, True), ("HardSwish", 14, True),
                                  ("BitwiseNot", 18, False), ("CenterCropPad", 18, False)):
        if op == "BitwiseNot":
            node, feeds, elem = helper.make_node(op, ["x"], ["y"]), \
                {"x": np.arange(12, dtype=np.int32).reshape(2, 6)}, TensorProto.INT32
        elif op == "CenterCropPad":
            node, feeds, elem = helper.make_node(op, ["x", "shape"], ["y"]), {"x": x}, F
        else:
            node, feeds, elem = helper.make_node(op, ["x"], ["y"]), {"x": x}, F
        model = model_at([node], [_info("x", [2, 6], elem)], [_info("y", None, elem)],
                         {"shape": np.array([2, 4], np.int64)}, 18)
        fails = {} if decomposed else below(since, f"ONNX {op} needs opset {since} or newer")
        check_every_target(model, feeds, fails)


def test_ops_whose_meaning_changes_after_18():
    """DFT's axis becomes an input at 20 (default -2 there, 1 before); GridSample's modes are
    renamed at 20; both are newer than 16 (DFT 17, GridSample 16)."""
    signal = RNG.normal(size=(1, 8, 1)).astype(np.float32)
    dft = helper.make_node("DFT", ["x"], ["y"], axis=1, onesided=1)
    model = model_at([dft], [_info("x", [1, 8, 1])], [_info("y", None)], {}, 18)
    check_every_target(model, {"x": signal}, below(17, "ONNX DFT needs opset 17 or newer"), tol=1e-4)
    grid = RNG.uniform(-1, 1, size=(1, 3, 3, 2)).astype(np.float32)
    sample = helper.make_node("GridSample", ["x", "grid"], ["y"], mode="bicubic",
                              align_corners=1)
    model = model_at([sample], [_info("x", [1, 1, 4, 4])], [_info("y", None)],
                     {"grid": grid}, 18)
    x = RNG.normal(size=(1, 1, 4, 4)).astype(np.float32)
    check_every_target(model, {"x": x}, below(16, "ONNX GridSample needs opset 16 or newer"), tol=1e-4)
    assert forms.adapt("GridSample", "", ["x", "g"], {}, 20, None, None)[2] == {"mode": "linear"}


def test_a_small_conv_net():
    w = RNG.normal(size=(4, 3, 3, 3)).astype(np.float32) * 0.3
    inits = {"w": w, "b": np.zeros(4, np.float32), "axes": np.array([2, 3], np.int64),
             "shape": np.array([0, -1], np.int64), "fc": RNG.normal(size=(4, 5)).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("ReduceMean", ["p", "axes"], ["m"], keepdims=1),
             helper.make_node("Reshape", ["m", "shape"], ["flat"]),
             helper.make_node("Gemm", ["flat", "fc"], ["logits"]),
             helper.make_node("Softmax", ["logits"], ["y"], axis=-1),
             helper.make_node("Shape", ["x"], ["dims"], start=2),
             helper.make_node("Cast", ["dims"], ["fdims"], to=F)]
    model = model_at(nodes, [_info("x", [2, 3, 8, 8])], [_info("y", None), _info("fdims", None)],
                     inits, 18)
    check_every_target(model, {"x": RNG.normal(size=(2, 3, 8, 8)).astype(np.float32)}, tol=1e-5)
    # Reshape's allowzero (14) with a target that holds a 0 cannot be written at 13
    node = helper.make_node("Reshape", ["x", "shape"], ["y"], allowzero=1)
    model = model_at([node], [_info("x", [0, 3])], [_info("y", None)],
                     {"shape": np.array([3, 0], np.int64)}, 18)
    check_every_target(model, {"x": np.ones((0, 3), np.float32)}, {13: "allowzero=1"})
    node = helper.make_node("Reshape", ["x", "shape"], ["y"], allowzero=1)
    model = model_at([node], [_info("x", [2, 3])], [_info("y", None)],
                     {"shape": np.array([3, -1], np.int64)}, 18)
    check_every_target(model, {"x": np.ones((2, 3), np.float32)})


# -- the per-lowering choice ---------------------------------------------------------------------------
def test_a_lowering_chooses_its_form_by_opset():
    proto = op_prototype("Foo")

    @proto.lower
    def everywhere(ctx, node):
        ctx.seen.append("default")

    @proto.lower(opsets=(20, None))
    def newer(ctx, node):
        ctx.seen.append("20")

    @proto.lower(opsets=(13, 14))
    def older(ctx, node):
        ctx.seen.append("13")
    assert [forms.choose_lowering(proto, t) for t in (13, 14, 15, 19, 20, 28)] == \
        [older, older, everywhere, everywhere, newer, newer]
    with pytest.raises(ValueError, match="not a range apart"):
        proto.lower(opsets=(14, 16))(everywhere)
    with pytest.raises(ValueError, match="not a range apart"):
        proto.lower(opsets=(30, 29))(everywhere)

    class Ctx:            # lower_fn, as the compiler calls it, picks by the context's opset
        def __init__(self, **attrs):
            self.seen = []
            self.__dict__.update(attrs)
    for attrs, seen in (({"opset": 13}, "13"), ({"opset": 18, "max_opset": 20}, "default"),
                        ({"max_opset": 20}, "20")):
        ctx = Ctx(**attrs)
        proto.lower_fn(ctx, None)
        assert ctx.seen == [seen]
    plain = op_prototype("Bar")
    plain.lower(everywhere)
    assert forms.choose_lowering(plain, 13) is forms.choose_lowering(plain, 28) is everywhere
    assert plain.lower_fn is everywhere
    assert forms.choose_lowering(op_prototype("Baz"), 18) is None


def test_gelu_lowers_to_onnx_gelu_from_opset_20_and_to_its_formula_before():
    from tf2ir.opp.fusion import OPS
    gelu = OPS["Gelu"]
    formula, node = forms.choose_lowering(gelu, 19), forms.choose_lowering(gelu, 20)
    assert formula is not node and forms.choose_lowering(gelu, 13) is formula
    assert forms.choose_lowering(gelu, forms.newest_runnable_opset()) is node
    assert formula.__name__ == "_lower_gelu" and node.__name__ == "_lower_gelu_20"
