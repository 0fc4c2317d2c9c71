"""The optimisation passes over the lowered ONNX graph, their switches and their order.

Each pass declares the passes it must run after; the run order is computed from that
(ties keep the order of PASSES). Switches are strings like "off:layout,off:cse",
"on:all" or "off:all" (later ones win), as `tf2ir convert --passes` takes them."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, List, Set, Tuple, Union

from tf2ir.ir.errors import ConversionError
from tf2ir.ir.passes.conv_fuse import fold_affine_into_weights
from tf2ir.ir.passes.cse import eliminate_common_subexpressions
from tf2ir.ir.passes.dce import remove_dead_nodes
from tf2ir.ir.passes.identity import remove_identities
from tf2ir.ir.passes.layout import sink_transposes
from tf2ir.ir.passes.lowered import LoweredGraph
from tf2ir.ir.passes.onnx_fold import fold_lowered_constants
from tf2ir.ir.passes.pad_fuse import fold_pads_into_convs
from tf2ir.ir.passes.reshape import simplify_reshapes

log = logging.getLogger("tf2ir")


@dataclass(frozen=True)
class OnnxPass:
    name: str
    run: Callable[[LoweredGraph], int]
    description: str
    default: bool = True
    after: Tuple[str, ...] = ()


PASSES: List[OnnxPass] = [
    OnnxPass("fold", fold_lowered_constants,
             "constant folding of ONNX nodes whose inputs are all constants (size-bounded)"),
    OnnxPass("reshape", simplify_reshapes,
             "run-time Reshape targets made constant; Reshape+unit-dim Transpose merged",
             after=("fold",)),
    OnnxPass("layout", sink_transposes,
             "NHWC<->NCHW transposes pushed through layout-agnostic ops and cancelled",
             after=("fold", "reshape")),
    OnnxPass("identity", remove_identities,
             "Identity, identity Transposes, zero Pads, +0 and *1 removed", after=("layout",)),
    OnnxPass("affine", fold_affine_into_weights,
             "per-channel Add/Mul (bias, batch norm) folded into Conv/Gemm/MatMul weights",
             after=("fold", "layout", "identity")),
    OnnxPass("pad", fold_pads_into_convs, "zero Pads of spatial dims folded into Conv pads",
             after=("fold", "layout", "identity")),
    OnnxPass("cse", eliminate_common_subexpressions,
             "common-subexpression elimination (equal nodes and small constants merged)",
             after=("affine",)),
    OnnxPass("dce", remove_dead_nodes, "dead-code elimination",
             after=("fold", "reshape", "layout", "identity", "affine", "pad", "cse")),
]
PASS_NAMES = [p.name for p in PASSES]


def ordered_passes() -> List[OnnxPass]:
    """PASSES in an order that honours every `after` (stable otherwise)."""
    by_name = {p.name: p for p in PASSES}
    done: List[OnnxPass] = []
    placed: Set[str] = set()
    while len(done) < len(PASSES):
        ready = [p for p in PASSES if p.name not in placed
                 and all(a in placed or a not in by_name for a in p.after)]
        if not ready:
            raise RuntimeError("the passes' 'after' declarations form a cycle")
        done.append(ready[0])
        placed.add(ready[0].name)
    return done


PassSwitches = Union[None, str, Iterable[str], Dict[str, bool]]


def enabled_passes(switches: PassSwitches = None) -> Set[str]:
    """The names of the passes to run: the defaults changed by `switches` (see module doc)."""
    enabled = {p.name for p in PASSES if p.default}
    if switches is None:
        return enabled
    if isinstance(switches, dict):
        unknown = set(switches) - set(PASS_NAMES)
        if unknown:
            raise ConversionError(f"unknown pass {sorted(unknown)[0]!r}; passes: {', '.join(PASS_NAMES)}",
                                  exit_code=2)
        return {n for n in PASS_NAMES if switches.get(n, n in enabled)}
    items = [switches] if isinstance(switches, str) else list(switches)
    for item in (part.strip() for text in items for part in text.split(",")):
        if not item:
            continue
        state, _, name = item.partition(":")
        if state not in ("on", "off") or not name:
            raise ConversionError(f"bad --passes value {item!r}: must be on:NAME or off:NAME",
                                  exit_code=2)
        names = PASS_NAMES if name == "all" else [name]
        if name != "all" and name not in PASS_NAMES:
            raise ConversionError(f"--passes names unknown pass {name!r}; passes: "
                                  f"{', '.join(PASS_NAMES)}, all", exit_code=2)
        enabled = enabled | set(names) if state == "on" else enabled - set(names)
    return enabled


def optimize_lowered(ctx, graph, switches: PassSwitches = None) -> Dict[str, int]:
    """Run the enabled passes over a LowerContext's nodes and initializers (in place);
    `graph` is the IR graph it lowered (its inputs, outputs and known ranks). Returns the
    count of rewrites per pass that ran."""
    enabled = enabled_passes(switches)
    if not enabled:
        return {}
    ranks = {v.name: v.desc.rank for v in graph.values() if v.desc.rank is not None}
    g = LoweredGraph(ctx.nodes, ctx.initializers, [v.name for v in graph.inputs],
                     [v.name for v in graph.outputs], ctx.fresh, ranks)
    counts = {}
    for p in ordered_passes():
        if p.name in enabled:
            start = time.perf_counter()
            counts[p.name] = p.run(g)
            log.debug("pass %-8s %5d rewrites %.3f s", p.name, counts[p.name],
                      time.perf_counter() - start)
    return counts


def describe_passes() -> str:
    """One line per pass, for --help."""
    return "\n".join(f"  {p.name:<9} {'on ' if p.default else 'off'}  {p.description}"
                     for p in ordered_passes())
