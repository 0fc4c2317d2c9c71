"""The size rule both constant folders share (ir/passes/fold.py on the IR, ir/onnx/passes/fold.py
on the lowered ONNX graph) and the ONNX passes that compute constants (affine, scale): a
constant computed from constants may be as large as FOLD_LIMIT_BYTES or as its inputs together,
no larger, so that folding never blows up the model file (Fill, Tile, Expand, big broadcasts)
and the bound is known before anything is computed (docs/reliability.md "Limits")."""

from __future__ import annotations

import math
from typing import Iterable, Optional, Sequence

import numpy as np

FOLD_LIMIT_BYTES = 1 << 20


def fold_limit(inputs: Iterable[Optional[np.ndarray]]) -> int:
    """The most bytes a result computed from `inputs` may hold (None counts nothing)."""
    return max(FOLD_LIMIT_BYTES, sum(np.asarray(a).nbytes for a in inputs if a is not None))


def fits(nbytes: Optional[int], inputs: Iterable[Optional[np.ndarray]]) -> bool:
    """Whether a result of `nbytes` (None: unknown, which never fits) may be folded."""
    return nbytes is not None and nbytes <= fold_limit(inputs)


def broadcast_elements(shapes: Sequence[Sequence[int]]) -> Optional[int]:
    """The element count of `shapes` broadcast together, or None where they do not broadcast."""
    try:
        return math.prod(np.broadcast_shapes(*(tuple(s) for s in shapes)))
    except (ValueError, TypeError):
        return None


def broadcast_fits(arrays: Sequence[np.ndarray], *inputs: Optional[np.ndarray],
                   size: Optional[int] = None) -> bool:
    """Whether a pass may compute a constant of `arrays` broadcast together (or of `size`
    elements) from `arrays` and `inputs`: at most FOLD_LIMIT_BYTES or the size of all of
    them (None counts nothing), checked before anything is computed; arrays that do not
    broadcast do not fit."""
    count = size if size is not None else broadcast_elements([a.shape for a in arrays])
    if count is None:
        return False
    return fits(count * max(a.itemsize for a in arrays), (*arrays, *inputs))
