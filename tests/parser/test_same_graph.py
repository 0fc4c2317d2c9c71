"""One model, one ONNX graph: a model converted from its SavedModel (read natively, and
frozen by TensorFlow), from its .pb frozen the way tf2ir freezes (control flow kept
functional) and from its .pb frozen the TF default way (control flow lowered to
Switch/Merge and frames, raised back by tf2ir) gives the same ONNX nodes, and each matches
TensorFlow on inputs of two batch and sequence lengths."""

from __future__ import annotations

import os

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")


def _onnx_signature(path):
    """The ONNX graph up to names and node order: a Weisfeiler-Lehman hash of the nodes
    labelled by op type (and their subgraphs' hashes) and edges by input position."""
    import networkx as nx
    import onnx

    def walk(graph) -> str:
        dag = nx.DiGraph()
        producer = {}
        for i, node in enumerate(graph.node):
            subgraphs = sorted(walk(a.g) for a in node.attribute
                               if a.type == onnx.AttributeProto.GRAPH)
            dag.add_node(i, label=node.op_type + "".join(subgraphs))
            producer.update((out, i) for out in node.output)
        for i, node in enumerate(graph.node):
            for position, name in enumerate(node.input):
                if name in producer:
                    dag.add_edge(producer[name], i, label=str(position))
        return nx.weisfeiler_lehman_graph_hash(dag, node_attr="label", edge_attr="label")
    model = onnx.load(path)
    return walk(model.graph), sorted(n.op_type for n in model.graph.node)


def _convert(source, out):
    from tf2ir.ir.onnx.compile import compile_to_file
    from tf2ir.parser.pipeline import convert_file
    graph, _ = convert_file(source)
    compile_to_file(graph, out)
    return out


def _run(path, feeds):
    import onnxruntime as ort
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, dict(zip([i.name for i in session.get_inputs()], feeds)))


class Block(tf.Module):
    """A transformer block (LayerNorm and GELU fusions) with a tf.cond on the sequence
    length and a tf.while_loop refinement: variables, control flow and fusions at once."""

    def __init__(self):
        super().__init__()
        import keras
        self.attention = keras.layers.MultiHeadAttention(2, 4)
        self.norm = keras.layers.LayerNormalization()
        self.dense = keras.layers.Dense(8, activation="gelu")

    @tf.function(input_signature=[tf.TensorSpec([None, None, 8], tf.float32, name="x")])
    def __call__(self, x):
        h = self.norm(x + self.attention(x, x))
        h = tf.cond(tf.shape(h)[1] > 3, lambda: h * 0.5, lambda: h + 1.0)
        h = tf.while_loop(lambda i, a: i < 2, lambda i, a: (i + 1, a + self.dense(a) * 0.1),
                          [tf.constant(0), h])[1]
        return {"y": h}


class PaddedNms(tf.Module):
    """Detection post-processing: tf.image's padded NMS is a while loop over box tiles."""

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="boxes"),
                                  tf.TensorSpec([None], tf.float32, name="scores")])
    def __call__(self, boxes, scores):
        indices, count = tf.image.non_max_suppression_padded(
            boxes, scores, max_output_size=6, iou_threshold=0.5, score_threshold=0.1,
            pad_to_max_output_size=True)
        return {"count": count, "indices": indices}


class MapFn(tf.Module):
    """tf.map_fn over the batch: a While over TensorLists (lowered: TensorArray frames)."""

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32, name="x")])
    def __call__(self, x):
        rows = tf.map_fn(lambda r: tf.reduce_sum(r * r) + tf.reduce_max(r), x)
        return {"y": rows * 2.0}


class LoopOutputs(tf.Module):
    """Signature outputs that are a While's and an If's own outputs: the SavedModel's
    IdentityN over them must vanish, as TF's freezing renames them."""

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32, name="x")])
    def __call__(self, x):
        steps, y = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2.0 - 0.5),
                                 [tf.constant(0), x])
        z = tf.cond(tf.reduce_sum(x) > 0, lambda: x + 1.0, lambda: x * x)
        return {"a": y, "b": steps, "c": z}


def _rows_inputs(rng, batch, length):
    return [rng.uniform(-1, 1, (batch, length)).astype(np.float32)]


def _block_inputs(rng, batch, length):
    return [rng.uniform(-1, 1, (batch, length, 8)).astype(np.float32)]


def _nms_inputs(rng, count, _):
    corners = np.sort(rng.uniform(0, 1, (count, 2, 2)), axis=1)
    boxes = corners.reshape(count, 4)[:, [0, 2, 1, 3]].astype(np.float32)
    return [boxes, rng.uniform(0, 1, count).astype(np.float32)]


MODELS = {"transformer_block": (Block, _block_inputs, {"LayerNormalization", "If", "Loop"}),
          "padded_nms": (PaddedNms, _nms_inputs, {"Loop"}),
          "map_fn": (MapFn, _rows_inputs, {"Loop"}),
          "loop_outputs": (LoopOutputs, _rows_inputs, {"Loop", "If"})}


@pytest.mark.filterwarnings("ignore::UserWarning")   # networkx's note on directed WL hashes
@pytest.mark.parametrize("name", sorted(MODELS))
def test_saved_model_and_both_frozen_pbs_give_the_same_onnx_graph(name, tmp_path, monkeypatch):
    from tf2ir.tools.models import freeze_function
    make, inputs, expected_ops = MODELS[name]
    module = make()
    specs = module.__call__.input_signature
    module(*[tf.zeros([2] + [d or 2 for d in s.shape[1:]], s.dtype) for s in specs])
    root = str(tmp_path)
    sources = [os.path.join(root, "saved")]
    tf.saved_model.save(module, sources[0], signatures={"serving_default": module.__call__})

    def outputs(*xs):
        result = module(*xs)
        return [result[k] for k in sorted(result)]
    for lowered in (False, True):
        sources.append(os.path.join(root, f"lowered_{lowered}.pb"))
        freeze_function(outputs, list(specs), sources[-1], lower_control_flow=lowered)
    monkeypatch.setenv("TF2IR_SAVED_MODEL_READER", "native")
    paths = [_convert(source, os.path.join(root, f"{i}.onnx")) for i, source in enumerate(sources)]
    monkeypatch.setenv("TF2IR_SAVED_MODEL_READER", "tf")    # the SavedModel frozen by TF
    paths.append(_convert(sources[0], os.path.join(root, "tf_frozen.onnx")))
    signatures = [_onnx_signature(p) for p in paths]
    assert signatures[0] == signatures[1] == signatures[2] == signatures[3]
    assert expected_ops <= set(signatures[0][1]), signatures[0][1]
    if name == "loop_outputs":
        assert "Identity" not in signatures[0][1], signatures[0][1]
    rng = np.random.default_rng(3)
    for sizes in ((1, 2), (3, 5), (20, 1)):
        feeds = inputs(rng, *sizes)
        result = module(*[tf.constant(f) for f in feeds])
        want = [result[k].numpy() for k in sorted(result)]
        for path in paths:
            for got, expected in zip(_run(path, feeds), want):
                np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
