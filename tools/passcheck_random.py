"""Random graphs for the pass property check (tools/passcheck.py): small TF GraphDefs over NHWC
tensors built from the ops the passes rewrite."""

from __future__ import annotations

from typing import Callable

import numpy as np

Choose = Callable[[int], int]           # choose(n) -> an int in [0, n): hypothesis or a RNG


def random_graph_def(choose: Choose, max_ops: int = 8):
    """A random TF GraphDef over NHWC tensors [1, H, W, C] built from the ops the passes
    rewrite: elementwise ops with tensors and constants (0, 1, per-channel vectors),
    nested and one-input Concats, Transposes (layout), Reshapes, Conv2D with bias and
    batch-norm-like Mul/Add, MatMul on the channels, zero and non-zero Pads before Conv and
    pools, pools and spatial means. Returns (graph_def, output tensor names)."""
    import tensorflow as tf
    rng = np.random.default_rng(choose(1 << 16))
    graph = tf.Graph()
    with graph.as_default():
        h, w = 3 + choose(2), 3 + choose(2)
        values = [tf.compat.v1.placeholder(tf.float32, [1, h, w, 2 + choose(3)], name=f"x{i}")
                  for i in range(1 + choose(2))]

        def pick(where=None):
            pool = [v for v in values if where is None or where(v)]
            return pool[choose(len(pool))] if pool else None

        def const(shape):
            kind = choose(4)
            if kind == 0:
                return tf.zeros(shape)
            if kind == 1:
                return tf.ones(shape)
            return tf.constant(rng.uniform(0.5 if kind == 2 else -1, 1.5, shape).astype("f4"))

        for _ in range(1 + choose(max_ops)):
            x = pick()
            shape = x.shape.as_list()
            c = shape[-1]
            op = choose(11)
            if op == 0:
                y = [tf.nn.relu, tf.abs, tf.negative, tf.sigmoid][choose(4)](x)
            elif op == 1:
                same = pick(lambda v: v.shape.as_list() == shape)
                other = same if choose(2) else const([c] if choose(2) else [])
                y = [tf.add, tf.multiply, tf.subtract, tf.maximum][choose(4)](x, other)
            elif op == 2:
                axis = [3, 1, -1][choose(3)]
                parts = [v for v in values if all(a == b for i, (a, b) in enumerate(zip(
                    v.shape.as_list(), shape)) if i != axis % 4) and v.shape.rank == 4]
                group = [parts[choose(len(parts))] for _ in range(2 + choose(2))]
                kind = choose(3)
                if kind == 1:        # a Concat read by a Concat of the same axis
                    inner = tf.raw_ops.ConcatV2(values=group[:2], axis=axis)
                    group = [inner] + group[2:] + group[:1]
                elif kind == 2:      # a one-input Pack (a one-input Concat once lowered)
                    if axis % 4 == 3:
                        one = tf.stack([x[:, :, :, choose(c)]], axis=3)
                    else:
                        one = tf.stack([x[:, choose(shape[1]), :, :]], axis=1)
                    group = group[:1] + [one]
                y = tf.raw_ops.ConcatV2(values=group, axis=axis)
            elif op == 3:
                perm = [[0, 3, 1, 2], [0, 2, 3, 1], [0, 2, 1, 3]][choose(3)]
                y = tf.transpose(x, perm)
                if choose(2):
                    y = tf.nn.relu(y)
                    back = [perm.index(i) for i in range(4)]
                    y = tf.transpose(y, back)
            elif op == 4:
                n, a, b, d = shape
                y = tf.reshape(x, [[n, a * b, 1, d], [n, b, a, d], [n, 1, a * b, d]][choose(3)])
            elif op in (5, 6):
                k = 1 + 2 * choose(2)
                out = 1 + choose(4)
                if choose(2):
                    pads = [[0, 0], [k // 2, k // 2], [k // 2, k // 2], [0, 0]]
                    x = tf.pad(x, pads)
                    padding = "VALID"
                else:
                    padding = "SAME"
                f = tf.constant(rng.uniform(-1, 1, [k, k, c, out]).astype("f4"))
                y = tf.nn.conv2d(x, f, 1, padding)
                if choose(2):
                    y = tf.nn.bias_add(y, const([out]))
                if choose(2):
                    y = y * const([out]) + const([out])
                if choose(2):
                    y = [tf.nn.relu, tf.nn.relu6][choose(2)](y)
            elif op == 7:
                out = 1 + choose(4)
                y = tf.matmul(x, tf.constant(rng.uniform(-1, 1, [c, out]).astype("f4")))
                if choose(2):
                    y = y + const([out])
            elif op == 8:
                pads = [[0, 0], [choose(2), choose(2)], [choose(2), choose(2)], [0, 0]]
                y = tf.pad(x, pads, constant_values=[0.0, 0.0, -1.0][choose(3)])
                if choose(2):
                    small = min(y.shape.as_list()[1:3]) < 2
                    y = tf.nn.max_pool2d(tf.nn.relu(y), 2, 1, "SAME" if small else "VALID")
            elif op == 9:
                kind = choose(3)
                if kind == 0:
                    y = tf.nn.avg_pool2d(x, 2, 1, "SAME")
                elif kind == 1:
                    y = tf.reduce_mean(x, [1, 2], keepdims=True)
                    y = y * tf.ones_like(x)            # broadcast back
                else:
                    y = tf.nn.max_pool2d(x, 2, 1, "SAME")
            else:
                y = tf.identity(x) * const([]) + const([])
            values.append(tf.identity(y, name=f"t{len(values)}") if choose(4) == 0 else y)
        outputs = [values[-1]]
        if len(values) > 2 and choose(2):
            outputs.append(values[1 + choose(len(values) - 2)])
        names = []
        for i, out in enumerate(outputs):
            names.append(tf.identity(out, name=f"out{i}").name)
    return graph.as_graph_def(), names
