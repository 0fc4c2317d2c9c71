"""The operator package: the built-in IR op prototypes, one module per op family, each op
with its shape/dtype inference and its ONNX lowering."""

from tf2ir.opp import array, math, nn  # noqa: F401  (importing declares the prototypes)
from tf2ir.opp import elementwise, image, reduce, shape  # noqa: F401
from tf2ir.opp import fusion  # noqa: F401
from tf2ir.opp import control  # noqa: F401
from tf2ir.opp import folding  # noqa: F401  (after the families: it extends their prototypes)
