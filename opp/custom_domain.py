"""The lowering the custom-domain op families share: an IR op with no standard-ONNX form
becomes one node of its family's ONNX domain, carrying the attributes its prototype declares;
tf2ir's runtime entry gives onnxruntime the op's kernel (native where a library serves it,
else the prototype's numpy kernel)."""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, Optional

Attrs = Dict[str, Any]


def kernel_lowering(ops: Iterable, domain: str,
                    adapt: Optional[Callable[[Attrs], Attrs]] = None) -> Callable:
    """A lowering for the prototypes of `ops` (an OpSet) to one node of `domain`; `adapt`
    rewrites the attributes first (e.g. a model as bytes rather than a list of ints)."""
    def lower(ctx, node) -> None:
        prototype = next(p for p in ops if p.op_type == node.op_type)
        attrs = {k: v for k, v in node.attrs.items() if k in prototype.attrs and v is not None}
        if adapt is not None:
            attrs = adapt(attrs)
        getattr(ctx.op, node.op_type)(*[ctx.input(i) for i in range(len(node.inputs))],
                                      outputs=[ctx.output(i) for i in range(len(node.outputs))],
                                      domain=domain, **attrs)
    return lower
