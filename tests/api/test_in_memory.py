"""tf2ir.convert on in-memory TensorFlow objects (parser/in_memory.py): each kind converts in
one call, runs in onnxruntime and matches TensorFlow on the same random input, with the
input and output names the object gives; what cannot be converted is one usage error."""

from __future__ import annotations

import numpy as np
import pytest

import tf2ir

RNG = np.random.RandomState(0)
TF_KERAS_MISSING = ("tf-keras is not installed: its wheel requires the 'tensorflow' "
                    "distribution, which would install over tensorflow-cpu, so it is not in "
                    "the test extras (pip install --no-deps tf-keras runs this test)")


@pytest.fixture(scope="module")
def tf():
    from tf2ir.parser.frozen import import_tensorflow
    return import_tensorflow()


@pytest.fixture(scope="module")
def keras(tf):
    import keras
    keras.utils.set_random_seed(0)
    return keras


def _run(model, feeds):
    """The ONNX model's outputs by name, run by onnxruntime on `feeds` (by input name)."""
    import onnxruntime
    session = onnxruntime.InferenceSession(model.SerializeToString())
    assert sorted(i.name for i in session.get_inputs()) == sorted(feeds)
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))


def _close(got, expected):
    expected = np.asarray(expected)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def _error(source, **kwargs) -> tf2ir.ConversionError:
    with pytest.raises(tf2ir.ConversionError) as caught:
        tf2ir.convert(source, quiet=True, **kwargs)
    assert "\n" not in str(caught.value)
    return caught.value


def _random(*shape):
    return RNG.normal(size=shape).astype(np.float32)


# -- Keras models ---------------------------------------------------------------------------
def test_keras3_sequential_the_example(keras):
    """tf2onnx.from_keras fails on this model ('Sequential' object has no attribute
    'output_names'); here it is one call."""
    model = keras.Sequential([keras.layers.Input((80, 80, 3)), keras.layers.Conv2D(8, 1, 1)])
    result = tf2ir.convert(model, quiet=True)
    x = _random(2, 80, 80, 3)
    (input_name,) = [i.name for i in result.model.graph.input]
    assert input_name.startswith("input_layer")   # the Input layer's name, not its tensor's
    outputs = _run(result.model, {input_name: x})
    assert list(outputs) == [model.layers[-1].name]   # the output layer's name
    _close(outputs[model.layers[-1].name], model(x))


def test_keras3_functional_two_inputs_two_outputs(keras):
    a, b = keras.Input((4,), name="a"), keras.Input((3,), name="b")
    joined = keras.layers.Concatenate()([a, b])
    model = keras.Model([a, b], [keras.layers.Dense(2, name="first")(a),
                                 keras.layers.Dense(5, activation="tanh", name="second")(joined)])
    result = tf2ir.convert(model, quiet=True)
    xa, xb = _random(3, 4), _random(3, 3)
    outputs = _run(result.model, {"a": xa, "b": xb})
    assert list(outputs) == ["first", "second"]
    expected = model([xa, xb])
    _close(outputs["first"], expected[0])
    _close(outputs["second"], expected[1])


def _subclassed(keras, tf):
    class Scaled(keras.Model):
        def __init__(self):
            super().__init__(name="scaled")
            self.dense = keras.layers.Dense(3)

        def call(self, x):
            return tf.nn.relu(self.dense(x)) * 2.0
    return Scaled()


def test_keras3_subclassed_built_by_a_call(keras, tf):
    model = _subclassed(keras, tf)
    model(tf.zeros((1, 5)))   # the shapes it was called with are its input spec (batch free)
    x = _random(4, 5)
    outputs = _run(tf2ir.convert(model, quiet=True).model, {"input": x})
    assert list(outputs) == ["output_0"]
    _close(outputs["output_0"], model(x))


def test_keras3_subclassed_with_input_signature(keras, tf):
    model = _subclassed(keras, tf)
    result = tf2ir.convert(model, quiet=True,
                           input_signature=[tf.TensorSpec([None, 5], tf.float32, name="feat")])
    x = _random(2, 5)
    _close(_run(result.model, {"feat": x})["output_0"], model(x))


def test_tf_keras_sequential(tf):
    tf_keras = pytest.importorskip("tf_keras", reason=TF_KERAS_MISSING)
    model = tf_keras.Sequential([tf_keras.layers.Input((4,), name="feat"),
                                 tf_keras.layers.Dense(3, activation="relu", name="hidden"),
                                 tf_keras.layers.Dense(2, name="scores")])
    x = _random(5, 4)
    outputs = _run(tf2ir.convert(model, quiet=True).model, {"feat": x})
    _close(outputs["scores"], model(x))


# -- functions and modules ------------------------------------------------------------------
def test_tf_function_with_its_signature(tf):
    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")])
    def stats(x):
        return {"mean": tf.reduce_mean(x, axis=0), "scaled": x * 3.0 + 1.0}
    x = _random(4, 3)
    outputs = _run(tf2ir.convert(stats, quiet=True).model, {"x": x})
    assert list(outputs) == ["mean", "scaled"]   # a returned dict's keys
    expected = stats(x)
    _close(outputs["mean"], expected["mean"])
    _close(outputs["scaled"], expected["scaled"])


def test_tf_function_given_input_signature(tf):
    @tf.function
    def blend(x, y):
        return tf.sigmoid(x) - y
    spec = tf.TensorSpec([2, 3], tf.float32)
    result = tf2ir.convert(blend, quiet=True, input_signature=[spec, spec])
    x, y = _random(2, 3), _random(2, 3)
    outputs = _run(result.model, {"x": x, "y": y})   # unnamed specs: the argument names
    _close(outputs["output_0"], blend(x, y))


def test_concrete_function(tf):
    @tf.function
    def gelu(x):
        return tf.nn.gelu(x)
    concrete = gelu.get_concrete_function(tf.TensorSpec([None, 6], tf.float32, name="act"))
    x = _random(3, 6)
    _close(_run(tf2ir.convert(concrete, quiet=True).model, {"act": x})["output_0"], gelu(x))


def _gated(tf):
    """A tf.Module with a variable, a tf.cond and a tf.while_loop in its __call__."""
    class Gated(tf.Module):
        def __init__(self):
            super().__init__(name="gated")
            self.scale = tf.Variable(np.float32(1.5))

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="features")])
        def __call__(self, x):
            y = tf.cond(tf.reduce_sum(x) > 0.0, lambda: x * self.scale, lambda: x - self.scale)
            _, total = tf.while_loop(lambda i, t: i < 3, lambda i, t: (i + 1, t + y),
                                     [tf.constant(0), tf.zeros_like(x)])
            return {"gated": y, "total": total}
    return Gated()


def test_module_with_control_flow_stays_functional(tf):
    module = _gated(tf)
    model = tf2ir.convert(module, quiet=True).model
    op_types = {node.op_type for node in model.graph.node}
    assert {"If", "Loop"} <= op_types   # not lowered to Switch/Merge frames before conversion
    assert not [i for i in model.graph.input if i.name != "features"]   # the variable: a constant
    for x in (_random(2, 3) + 1.0, -np.abs(_random(2, 3)) - 1.0):   # both branches
        outputs = _run(model, {"features": x})
        expected = module(x)
        _close(outputs["gated"], expected["gated"])
        _close(outputs["total"], expected["total"])


def test_loaded_saved_model_signature(tf, tmp_path):
    module = _gated(tf)
    tf.saved_model.save(module, str(tmp_path / "gated"),
                        signatures={"serving_default": module.__call__, "other": module.__call__})
    loaded = tf.saved_model.load(str(tmp_path / "gated"))
    result = tf2ir.convert(loaded, signature="other", quiet=True)
    x = _random(3, 3)
    outputs = _run(result.model, {"features": x})
    expected = loaded.signatures["other"](features=x)
    assert sorted(outputs) == ["gated", "total"]
    _close(outputs["total"], expected["total"])


def test_module_with_lookup_table(tf):
    class Vocab(tf.Module):
        def __init__(self):
            super().__init__()
            init = tf.lookup.KeyValueTensorInitializer(tf.constant(["a", "b", "c"]),
                                                       tf.constant([7, 8, 9], tf.int64))
            self.table = tf.lookup.StaticHashTable(init, default_value=-1)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="words")])
        def __call__(self, words):
            return self.table.lookup(words)
    module = Vocab()
    words = np.array(["c", "zz", "a", "b"], dtype=object)
    outputs = _run(tf2ir.convert(module, quiet=True).model, {"words": words})
    _close(outputs["output_0"], module(tf.constant(words.astype(str))))


# -- refusals -------------------------------------------------------------------------------
def test_unbuilt_subclassed_model_asks_for_input_signature(keras, tf):
    error = _error(_subclassed(keras, tf))
    assert str(error) == ("model <keras.Scaled 'scaled'>: the Keras model has no known input "
                          "shapes (a subclassed model never built or called); pass "
                          "input_signature=[tf.TensorSpec(...), ...]")
    assert error.exit_code == 2 and isinstance(error, tf2ir.UsageError)


def test_tf_function_without_signature(tf):
    @tf.function
    def double(x):
        return x * 2
    error = _error(double)
    assert str(error) == ("model <tf.function 'double'>: the tf.function has no "
                          "input_signature; give one to tf.function or pass "
                          "input_signature=[tf.TensorSpec(...), ...]")
    assert error.exit_code == 2


def test_unknown_signature_lists_the_available(tf):
    error = _error(_gated(tf).__call__, signature="serving_default")
    assert error.exit_code == 2 and "signature= chooses among" in str(error)

    class Signed(tf.Module):
        def __init__(self, function):
            super().__init__(name="signed")
            self.signatures = {"serving_default": function, "extra": function}
    concrete = tf.function(lambda x: x + 1.0).get_concrete_function(tf.TensorSpec([2]))
    error = _error(Signed(concrete), signature="nope")
    assert str(error) == ("model <tf.Module 'signed'>: no signature 'nope'; available: extra, "
                          "serving_default (choose with signature=)")
    assert error.exit_code == 2


@pytest.mark.parametrize("source, type_name", [(np.zeros(3), "numpy.ndarray"),
                                                (object(), "object"), (3.5, "float")])
def test_unsupported_type(source, type_name):
    error = _error(source)
    assert str(error) == (f"model <{type_name}>: cannot convert an object of type "
                          f"{type_name}; tf2ir converts a model path, a GraphDef or its bytes, "
                          "a keras.Model (Keras 3 or tf-keras), a tf.function, a "
                          "ConcreteFunction, or a tf.Module or loaded SavedModel with "
                          "signatures")
    assert error.exit_code == 2 and isinstance(error, tf2ir.UsageError)
