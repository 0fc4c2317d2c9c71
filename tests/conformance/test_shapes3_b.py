"""Three-way shape runs (issue 20), a representative case of each lowering this round taught to
compute at run time what it used to need at conversion time: every case runs with every
placeholder dim unknown and with every argument of unknown rank, against TensorFlow over the
same relaxed specs (the whole suite: python -m tf2ir.tools.shapes3). Before: the Equal, Einsum
cases failed in onnxruntime; the others were refused (channel count, image size, rank)."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, rand

tf = pytest.importorskip("tensorflow")
raw = tf.raw_ops

CASES = {
    # shapes that do not broadcast, known only at run time: TF's scalar False / True
    "equal_incompatible": (lambda a, b: [raw.Equal(x=a, y=b, incompatible_shape_error=False),
                                         raw.NotEqual(x=a, y=b, incompatible_shape_error=False)],
                           [np.int32([1, 2]), np.int32([1, 2, 3])]),
    # '...' standing for different numbers of dims in the two operands
    "einsum_ellipsis": (lambda a, b: tf.einsum("...ij,...jk->...ik", a, b),
                        [rand(2, 3, 4), rand(4, 5)]),
    "matmul_adjoint": (lambda a, b: tf.linalg.matmul(a, b, adjoint_a=True, adjoint_b=True),
                       [rand(2, 4, 3), rand(2, 5, 4)]),
    "dense_set": (lambda a, b: raw.DenseToDenseSetOperation(set1=a, set2=b, set_operation="a-b"),
                  [rand(2, 2, 5, dtype="int32", low=0, high=2),
                   rand(2, 2, 3, dtype="int32", low=0, high=2)]),
    "patches_same": (lambda x: tf.image.extract_patches(x, [1, 3, 2, 1], [1, 2, 1, 1],
                                                        [1, 1, 2, 1], "SAME"),
                     [rand(2, 5, 6, 3)]),
    "resize_area": (lambda x: raw.ResizeArea(images=x, size=[4, 9], align_corners=True),
                    [rand(1, 5, 6, 2)]),
}


@pytest.mark.parametrize("mode", ["dims", "rank"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_relaxed_shapes_convert_and_match(monkeypatch, mode, case):
    monkeypatch.setenv("TF2IR_CONFORMANCE_SHAPES", mode)
    fn, inputs = CASES[case]
    check_op(fn, inputs, atol=1e-4)
