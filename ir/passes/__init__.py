"""IR passes: short functions that rewrite a Graph in place through its mutation verbs."""

from tf2ir.ir.passes.fold import fold_constants
from tf2ir.ir.passes.inline import inline_subgraphs

__all__ = ["fold_constants", "inline_subgraphs"]
