"""The IR graph's interface as the user asks for it (ExportOptions, ir/export.py): inputs and
outputs channels-first, and renamed inputs and outputs. Applied to the verified IR graph
before the passes, so the layout passes cancel the transposes this adds.

- `inputs_as_nchw`: the named graph input (rank 3 to 5, channels last) is declared
  channels-first, and a Transpose back to channels-last feeds every node (subgraphs' nodes
  too) that read it; the ONNX layout pass then cancels it against the Transpose the first
  convolution's lowering puts before itself, so a CNN keeps none.
- `outputs_as_nchw`: a Transpose to channels-first before the named graph output, which
  keeps its name (the value it transposes takes a fresh one).
- `rename_inputs`, `rename_outputs`: the graph input/output Value takes the new name; every
  reader (subgraphs read outer Values themselves, not names) and the graph's outputs follow.

Names may be given as "x" or "x:0"; channels-first names and rename keys are the graph's
ORIGINAL names (rename and channels-first of one input: `inputs_as_nchw=("x",)`,
`rename_inputs={"x": "image"}`). `interface_map` tells verification, from the written model's
interface and the options, which original tensor and layout each ONNX input/output stands for.
"""

from __future__ import annotations

from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.ir.export import ExportOptions
from tf2ir.ir.graph import Graph, Value
from tf2ir.ir.tensor import TensorDesc

RANKS = (3, 4, 5)           # channels-last layouts there are: NWC, NHWC, NDHWC
_FORMATS = {3: ("ND", "ND"), 4: ("NHWC", "NCHW"), 5: ("NDHWC", "NCDHW")}
_APPLIED = "_tf2ir_io_options"   # what a graph was given already (the attribute's name)

Perm = Tuple[int, ...]


def to_channels_first(rank: int) -> Perm:
    """The permutation NHWC -> NCHW (channels last to channels second) of a rank-`rank` tensor."""
    return (0, rank - 1) + tuple(range(1, rank - 1))


def to_channels_last(rank: int) -> Perm:
    """The permutation NCHW -> NHWC (its inverse)."""
    return (0,) + tuple(range(2, rank)) + (1,)


def wants_io_options(export: ExportOptions) -> bool:
    return bool(export.inputs_as_nchw or export.outputs_as_nchw or export.rename_inputs
                or export.rename_outputs)


def resolve_name(name: str, names: Sequence[str]) -> Optional[str]:
    """The one of `names` that `name` means: itself, or for "x:0" the name "x"; else None."""
    if name in names:
        return name
    if name.endswith(":0") and name[:-2] in names:
        return name[:-2]
    return None


def _usage(message: str, model: Optional[str]) -> ConversionError:
    return ConversionError(message, model=model, exit_code=ExitStatus.USAGE)


def _listing(names: Sequence[str]) -> str:
    return ", ".join(repr(n) for n in names) if names else "none"


def _resolve_all(option: str, asked: Sequence[str], values: Sequence[Value], what: str,
                 model: Optional[str]) -> List[Value]:
    """The Values of `values` that `asked` names (in order, each once); one error names every
    name that is none of them and lists what there is."""
    names = [v.name for v in values]
    found: List[Value] = []
    missing = []
    for name in asked:
        hit = resolve_name(name, names)
        if hit is None:
            missing.append(name)
            continue
        value = values[names.index(hit)]
        if value not in found:
            found.append(value)
    if missing:
        some = "is not a graph " + what if len(missing) == 1 else "are not graph " + what + "s"
        raise _usage(f"{option}: {_listing(missing)} {some} (the graph's {what}s: "
                     f"{_listing(names)})", model)
    return found


def _check_rank(option: str, value: Value, what: str, model: Optional[str]) -> int:
    rank = value.desc.rank
    if rank not in RANKS:
        known = "unknown" if rank is None else str(rank)
        raise _usage(f"{option}: {what} {value.name!r} has rank {known}; channels-first needs "
                     "a known rank of 3 to 5", model)
    return rank


def _transposed(desc: TensorDesc, perm: Perm, first: bool) -> TensorDesc:
    """`desc` permuted by `perm`, its format channels-first (`first`) or channels-last."""
    shape = None if desc.shape is None else tuple(desc.shape[p] for p in perm)
    fmt = _FORMATS[len(perm)][1 if first else 0]
    return TensorDesc(desc.dtype, shape, fmt, fmt)


def _add_transpose(graph: Graph, x: Value, perm: Perm, name: str, out_name: str,
                   desc: TensorDesc) -> Value:
    """An IR Transpose of `x` by `perm` (its perm a Const) at the current insertion point."""
    from tf2ir.ir.infer import infer_node
    perm_value = graph.add_const(np.array(perm, np.int64), f"{name}/perm")
    node = graph.add_node("Transpose", [x, perm_value], name=name, output_names=[out_name],
                          output_descs=[desc])
    assert perm_value.producer is not None
    infer_node(perm_value.producer)
    infer_node(node)
    return node.outputs[0]


def _replace_everywhere(graph: Graph, old: Value, new: Value) -> None:
    """Every reader of `old` reads `new`: nodes (of any nested graph: `uses` holds them all)
    and the outputs of this graph and of its nested subgraphs."""
    graph.replace_all_uses_with(old, new)

    def outputs(g: Graph) -> None:
        for node in g.nodes:
            for sub in node.subgraphs.values():
                if old in sub.outputs:
                    sub.outputs = [new if v is old else v for v in sub.outputs]
                outputs(sub)
    outputs(graph)


def _input_as_nchw(graph: Graph, x: Value) -> None:
    assert x.desc.shape is not None          # (checked: ranks 3 to 5 only)
    rank = len(x.desc.shape)
    old_desc = x.desc
    x.desc = _transposed(old_desc, to_channels_first(rank), first=True)
    with graph.inserting_before(graph.nodes[0] if graph.nodes else None):
        channels_last = _add_transpose(graph, x, to_channels_last(rank), f"{x.name}/to_nhwc",
                                       f"{x.name}/nhwc", old_desc.copy())
    _replace_everywhere(graph, x, channels_last)
    assert channels_last.producer is not None
    graph.set_input(channels_last.producer, 0, x)     # (moved off it with the rest)


def _output_as_nchw(graph: Graph, y: Value) -> None:
    assert y.desc.shape is not None          # (checked: ranks 3 to 5 only)
    rank = len(y.desc.shape)
    name = y.name
    graph.rename_value(y, graph.unique_name(f"{name}/nhwc"))
    with graph.inserting_before(None):
        out = _add_transpose(graph, y, to_channels_first(rank), f"{name}/to_nchw", name,
                             _transposed(y.desc, to_channels_first(rank), first=True))
    graph.outputs = [out if v is y else v for v in graph.outputs]


def _check_renames(graph: Graph, renames: List[Tuple[Value, str]], model: Optional[str]) -> None:
    """A new name that another value keeps, or that two values are given, is one error.
    Names renamed away are free (inputs may swap names)."""
    moving = {id(v) for v, _ in renames}
    news: Dict[str, Value] = {}
    for value, new in renames:
        if new in news and news[new] is not value:
            raise _usage(f"rename: {news[new].name!r} and {value.name!r} are both renamed to "
                         f"{new!r}", model)
        news[new] = value
        if graph.has_value(new) and id(graph.value(new)) not in moving:
            raise _usage(f"rename: the new name {new!r} of {value.name!r} is the name of "
                         "another value of the graph", model)


def _rename(graph: Graph, renames: List[Tuple[Value, str]]) -> None:
    """Give each Value its new name (checked by `_check_renames`)."""
    temporary = []
    for value, new in renames:       # through names no one has, so that swaps work
        graph.rename_value(value, graph.unique_name(f"{new}/renaming"))
        temporary.append((value, new))
    for value, new in temporary:
        graph.rename_value(value, new)


def apply_io_options(graph: Graph, export: ExportOptions, model: Optional[str] = None) -> None:
    """Rewrite `graph`'s interface in place as `export` asks (nothing when it asks nothing).
    Every name is checked before anything changes; a graph given the same options again is
    left as it is (build_model may run twice on one graph), other options are refused."""
    if not wants_io_options(export):
        return
    asked = (tuple(export.inputs_as_nchw), tuple(export.outputs_as_nchw),
             tuple(sorted(export.rename_inputs.items())),
             tuple(sorted(export.rename_outputs.items())))
    done = getattr(graph, _APPLIED, None)
    if done is not None:
        if done == asked:
            return
        raise _usage("the graph's inputs and outputs were rewritten already, as other options "
                     "asked", model)
    nchw_in = _resolve_all("inputs_as_nchw", export.inputs_as_nchw, graph.inputs, "input", model)
    nchw_out = _resolve_all("outputs_as_nchw", export.outputs_as_nchw, list(graph.outputs),
                            "output", model)
    for value in nchw_in:
        _check_rank("inputs_as_nchw", value, "input", model)
    for value in nchw_out:
        _check_rank("outputs_as_nchw", value, "output", model)
    renamed_in = _resolve_all("rename_inputs", list(export.rename_inputs), graph.inputs,
                              "input", model)
    renamed_out = _resolve_all("rename_outputs", list(export.rename_outputs),
                               list(graph.outputs), "output", model)
    renames = list(zip(renamed_in, export.rename_inputs.values())) \
        + list(zip(renamed_out, export.rename_outputs.values()))
    _check_renames(graph, renames, model)
    # nothing fails from here on: renamed first, the Transposes then take the new names
    _rename(graph, renames)
    for value in nchw_in:
        _input_as_nchw(graph, value)
    for value in nchw_out:
        _output_as_nchw(graph, value)
    setattr(graph, _APPLIED, asked)


def interface_map(export: ExportOptions, inputs: Mapping[str, Optional[int]],
                  outputs: Mapping[str, Optional[int]]
                  ) -> Tuple[Dict[str, Tuple[str, Optional[Perm]]],
                             Dict[str, Tuple[str, Optional[Perm]]]]:
    """For verification: given the written ONNX model's inputs and outputs (name -> rank) and
    the options it was converted with, map each ONNX name to (the original graph name, the
    permutation `perm` with `onnx_array == np.transpose(original_array, perm)`, or None when
    the layouts are the same). Feed TF `np.transpose(onnx_feed, np.argsort(perm))`; compare
    `np.transpose(tf_output, perm)` with onnxruntime's output. Original names are the IR's
    ("x" for TF's "x:0"); a rename key "x:0" is read as "x"."""
    def side(names: Mapping[str, Optional[int]], renames: Mapping[str, str],
             nchw: Sequence[str]) -> Dict[str, Tuple[str, Optional[Perm]]]:
        back = {new: (old[:-2] if old.endswith(":0") else old) for old, new in renames.items()}
        originals = {name: back.get(name, name) for name in names}
        wanted = set()
        for name in nchw:
            hit = resolve_name(name, list(originals.values()))
            if hit is not None:
                wanted.add(hit)
        result: Dict[str, Tuple[str, Optional[Perm]]] = {}
        for name, rank in names.items():
            original = originals[name]
            perm = to_channels_first(rank) if original in wanted and rank in RANKS else None
            result[name] = (original, perm)
        return result
    return (side(inputs, export.rename_inputs, export.inputs_as_nchw),
            side(outputs, export.rename_outputs, export.outputs_as_nchw))
