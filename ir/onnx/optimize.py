"""The ONNX passes over any ONNX model (`tf2ir optimize`): a ModelProto becomes the graph the
passes work on (its nodes, numpy initializers, Constant nodes as initializers, ranks, dtypes
and shapes from onnx's shape inference), the passes run as after a conversion (switched by
the same `--passes` words), and the result is a ModelProto again, written by the one
checked, atomic writer (ir/onnx/writer.py).

What a model's user can see is kept: graph inputs and outputs (names, order, types), the
names nodes read inside subgraphs, initializers that are also graph inputs (defaults a
caller may override: never folded), sparse initializers, local functions, opsets of other
domains and the model's metadata. A model of a default-domain opset below the passes' is
first converted to it by onnx's version converter."""

from __future__ import annotations

import itertools
import os
from collections import Counter
from typing import Dict, List, Optional, Sequence, Set, Tuple

import numpy as np
import onnx
from onnx import helper, numpy_helper

from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.ir.onnx.graph import OnnxGraph, graph_reads
from tf2ir.ir.onnx.opset import OPSET
from tf2ir.ir.onnx.passes import ONNX_PASSES
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.ir.passes.manager import PassManager, Switches

# Initializers at least this large stand in as typed graph inputs while onnx infers shapes
# (the model is not serialized with its weights; models over 2 GB are inferred too).
_INFER_INLINE_BYTES = 1024
_ONNX_TO_DTYPE = {int(v): k for k, v in ONNX_DTYPES.items()}
_ROUNDS = 16  # passes, shape inference again, passes ... while the graph shrinks
_CONSTANT_ATTRS = ("value", "value_float", "value_floats", "value_int", "value_ints",
                   "value_string", "value_strings")


def onnx_pass_manager(passes: Switches = None, check_passes: bool = False) -> PassManager:
    """The ONNX passes switched by `passes` (`--passes` words; an IR pass's name is not one of
    them here); with `check_passes` the graph is checked after every pass."""
    from tf2ir.ir.onnx.compile import check_after_pass
    return PassManager(ONNX_PASSES, passes, "--passes",
                       check=check_after_pass if check_passes else None)


def load_model(path: str) -> Tuple[onnx.ModelProto, List[str]]:
    """Read an ONNX model with its external data; return it and the external data files it
    read. A file that is not an ONNX model, or data that cannot be read, is a ConversionError."""
    if not os.path.isfile(path):
        raise ConversionError(f"{path}: no such model file" if not os.path.exists(path)
                              else f"{path}: not a regular file", exit_code=ExitStatus.USAGE)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        model = onnx.load(path, load_external_data=False)
    except Exception as exc:   # protobuf's DecodeError and onnx's own checks
        raise ConversionError(f"{path}: not an ONNX model ({type(exc).__name__}: "
                              f"{_first_line(exc)})") from None
    files = external_files(model, folder)
    if files:
        try:
            onnx.load_external_data_for_model(model, folder)
        except OSError as exc:
            raise ConversionError(f"{path}: cannot read its external data: "
                                  f"{exc.strerror or exc}") from None
        except Exception as exc:   # onnx refuses a location outside the folder, a non-file
            raise ConversionError(f"{path}: cannot read its external data: "
                                  f"{_first_line(exc)}") from None
    if not model.HasField("graph"):
        raise ConversionError(f"{path}: not an ONNX model (no graph)")
    return model, files


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def external_files(model: onnx.ModelProto, folder: str) -> List[str]:
    """The external data files `model`'s tensors name (subgraphs' included), under `folder`."""
    files = set()
    for tensor in _all_tensors(model.graph):
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            for entry in tensor.external_data:
                if entry.key == "location":
                    files.add(os.path.join(folder, entry.value))
    return sorted(files)


def _all_tensors(graph: onnx.GraphProto):
    yield from graph.initializer
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            for sub in list(attr.graphs) + ([attr.g] if attr.HasField("g") else []):
                yield from _all_tensors(sub)


def _default_opset(model: onnx.ModelProto) -> int:
    return max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
               default=0)


def _upgrade(model: onnx.ModelProto, name: str) -> onnx.ModelProto:
    """`model` at the passes' opset (OPSET) when it is older (onnx's version converter)."""
    version = _default_opset(model)
    if version >= OPSET or not len(model.graph.node):
        return model
    from onnx import version_converter
    try:
        return version_converter.convert_version(model, OPSET)
    except Exception as exc:
        raise ConversionError(f"{name}: cannot convert its opset {version} to {OPSET} for the "
                              f"passes: {str(exc).splitlines()[0] if str(exc) else exc}") from None


def _inferred(model: onnx.ModelProto, nodes: Sequence[onnx.NodeProto],
              initializers: Dict[str, np.ndarray]) -> Dict[str, onnx.TypeProto]:
    """Each name's type as onnx's shape inference sees it for `model`'s graph holding `nodes`
    and `initializers` (empty where inference fails). Large initializers stand in as typed
    graph inputs: the weights are not serialized again."""
    light = onnx.ModelProto()
    graph = model.graph
    saved_init, saved_nodes = list(graph.initializer), list(graph.node)
    del graph.initializer[:]
    del graph.node[:]
    try:
        light.CopyFrom(model)
    finally:
        graph.initializer.extend(saved_init)
        graph.node.extend(saved_nodes)
    light.graph.node.extend(nodes)
    inputs = {i.name for i in light.graph.input}
    for name, array in initializers.items():
        if name in inputs:
            continue
        if array.nbytes < _INFER_INLINE_BYTES or array.dtype == object:
            light.graph.initializer.append(numpy_helper.from_array(array, name))
        else:
            light.graph.input.append(helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(array.dtype), array.shape))
    try:
        light = onnx.shape_inference.infer_shapes(light, strict_mode=False, data_prop=True)
    except Exception:   # a model onnx cannot infer (custom domains): the passes know less
        pass
    g = light.graph
    return {v.name: v.type for v in itertools.chain(g.input, g.value_info, g.output)}


def _nbytes(t: onnx.TensorProto) -> int:
    if t.HasField("raw_data"):
        return len(t.raw_data)
    count = int(np.prod(t.dims, dtype=np.int64)) if len(t.dims) else 1
    return count * 8


def _describe(types: Dict[str, onnx.TypeProto]):
    """ranks, dtypes (IR names) and shapes (None: unknown dim) of tensor-typed names."""
    ranks, dtypes, shapes = {}, {}, {}
    for name, tp in types.items():
        if tp.WhichOneof("value") != "tensor_type":
            continue
        tensor = tp.tensor_type
        if tensor.elem_type in _ONNX_TO_DTYPE:
            dtypes[name] = _ONNX_TO_DTYPE[tensor.elem_type]
        if tensor.HasField("shape"):
            dims = tuple(d.dim_value if d.HasField("dim_value") else None
                         for d in tensor.shape.dim)
            ranks[name] = len(dims)
            shapes[name] = dims
    return ranks, dtypes, shapes


def _constant_value(node: onnx.NodeProto) -> Optional[np.ndarray]:
    """The tensor of a default-domain Constant node (None for a sparse one)."""
    if node.op_type != "Constant" or node.domain not in ("", "ai.onnx") \
            or len(node.attribute) != 1 or node.attribute[0].name not in _CONSTANT_ATTRS:
        return None
    value = helper.get_attribute_value(node.attribute[0])
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if node.attribute[0].name.startswith("value_string"):
        return np.array(value, dtype=object)
    return np.array(value, dtype=np.float32 if "float" in node.attribute[0].name else np.int64)


class _Names:
    """Fresh names unused anywhere in the model (subgraphs included)."""

    def __init__(self, graph: onnx.GraphProto):
        self.used: Set[str] = set()
        self._collect(graph)

    def _collect(self, graph: onnx.GraphProto) -> None:
        for v in itertools.chain(graph.input, graph.output, graph.value_info):
            self.used.add(v.name)
        self.used.update(t.name for t in graph.initializer)
        for node in graph.node:
            self.used.update(node.input)
            self.used.update(node.output)
            self.used.add(node.name)
            for attr in node.attribute:
                for sub in list(attr.graphs) + ([attr.g] if attr.HasField("g") else []):
                    self._collect(sub)

    def __call__(self, hint: str) -> str:
        name, count = hint, 0
        while name in self.used:
            count += 1
            name = f"{hint}_{count}"
        self.used.add(name)
        return name


def _read_names(nodes: Sequence[onnx.NodeProto]) -> Set[str]:
    names: Set[str] = set()
    for node in nodes:
        names.update(node.input)
        for attr in node.attribute:
            for sub in list(attr.graphs) + ([attr.g] if attr.HasField("g") else []):
                names.update(_read_names(sub.node))
                names.update(o.name for o in sub.output)
    return names


def op_counts(model: onnx.ModelProto) -> Counter:
    """Nodes of the main graph per op type (a custom domain's as 'domain.Op')."""
    return Counter(n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}"
                   for n in model.graph.node)


def optimize_model(model: onnx.ModelProto, passes: Switches = None,
                   check_passes: bool = False, name: str = "model",
                   manager: Optional[PassManager] = None
                   ) -> Tuple[onnx.ModelProto, List[Tuple[str, np.ndarray]], Dict[str, int]]:
    """Run the enabled ONNX passes over `model` (its external data loaded). Returns (the
    ModelProto without initializers, its initializers as (name, array), rewrites per pass),
    for ir/onnx/writer.write_model."""
    manager = manager if manager is not None else onnx_pass_manager(passes, check_passes)
    model = _upgrade(model, name)
    graph = model.graph
    names = _Names(graph)
    input_names = [v.name for v in graph.input]
    defaults = {t.name for t in graph.initializer if t.name in set(input_names)}
    initializers: Dict[str, np.ndarray] = {}
    kept_tensors: List[onnx.TensorProto] = []   # overridable defaults, kept as they are
    for tensor in graph.initializer:
        if tensor.name in defaults:
            kept_tensors.append(tensor)
            continue
        try:
            initializers[tensor.name] = numpy_helper.to_array(tensor)
        except Exception as exc:
            raise ConversionError(f"{name}: initializer {tensor.name!r} cannot be read: "
                                  f"{str(exc).splitlines()[0] if str(exc) else exc}") from None
    outputs = [v.name for v in graph.output]
    nodes: List[onnx.NodeProto] = []
    for node in graph.node:
        value = _constant_value(node)
        if value is not None and node.output[0] not in outputs and value.dtype != object:
            initializers[node.output[0]] = value
        else:
            nodes.append(node)
    sparse = [s.values.name for s in graph.sparse_initializer]
    _check_order(nodes, set(input_names) | set(initializers) | set(sparse), name)
    counts: Dict[str, int] = {}
    for _ in range(_ROUNDS):   # what the passes make constant lets inference know more
        ranks, dtypes, shapes = _describe(_inferred(model, nodes, initializers))
        lowered = _pass_graph(nodes, initializers, input_names + sparse, outputs, names,
                              ranks, dtypes, shapes)
        try:
            done = manager.run(lowered, kind="onnx")
        except ConversionError as exc:
            raise exc.located(model=name)
        for key, count in done.items():
            counts[key] = counts.get(key, 0) + count
        before, nodes, initializers = len(nodes), lowered.to_protos(), lowered.initializers
        if len(nodes) == before:
            break
    out = _rebuild(model, nodes, lowered, kept_tensors, names)
    used = _used(out.graph.node, lowered)
    return out, [(n, a) for n, a in lowered.initializers.items() if n in used], counts


def _check_order(nodes: Sequence[onnx.NodeProto], known: Set[str], name: str) -> None:
    """Refuse a graph the pass graph cannot hold: a node reading a name no earlier node,
    initializer or graph input holds (ONNX lists nodes in topological order), or a name
    produced twice."""
    known = set(known)
    later = {x for node in nodes for x in node.output}
    for node in nodes:
        node_name = node.name or None
        reads = list(node.input)
        for attr in node.attribute:        # outer names its subgraphs read
            for sub in list(attr.graphs) + ([attr.g] if attr.HasField("g") else []):
                reads.extend(x for x in graph_reads(sub) if x in later)
        for x in reads:
            if x and x not in known:
                raise ConversionError(f"not a valid ONNX graph: the node reads {x!r}, which no "
                                      "earlier node, initializer or graph input holds (nodes "
                                      "must be in topological order)", model=name,
                                      node=node_name, op_type=node.op_type)
        for x in node.output:
            if x in known:
                raise ConversionError(f"not a valid ONNX graph: the node writes {x!r}, which "
                                      "another node, initializer or graph input holds",
                                      model=name, node=node_name, op_type=node.op_type)
            if x:
                known.add(x)


def _pass_graph(nodes, initializers, inputs, outputs, fresh, ranks, dtypes,
                shapes) -> OnnxGraph:
    """The graph the ONNX passes work on (the one a conversion lowers into)."""
    return OnnxGraph.from_protos(nodes, fresh, inputs=inputs, outputs=outputs,
                                 initializers=initializers, ranks=ranks, dtypes=dtypes,
                                 shapes=shapes)


def _used(protos: Sequence[onnx.NodeProto], lowered: OnnxGraph) -> Set[str]:
    used = _read_names(protos)
    used.update(lowered.outputs)
    return used


def _rebuild(model: onnx.ModelProto, nodes: List[onnx.NodeProto], lowered: OnnxGraph,
             kept_tensors: List[onnx.TensorProto], names: _Names) -> onnx.ModelProto:
    graph = model.graph
    produced = {o for n in nodes for o in n.output}
    # A graph output the passes turned into a constant is written by a Constant node.
    for out in lowered.outputs:
        if out in lowered.initializers and out not in produced:
            array = lowered.initializers.pop(out)
            nodes.append(helper.make_node("Constant", [], [out], name=names("Constant_output"),
                                          value=numpy_helper.from_array(array, out)))
            produced.add(out)
    value_info = [v for v in graph.value_info if v.name in produced]
    out_graph = helper.make_graph(nodes, graph.name, list(graph.input), list(graph.output),
                                  initializer=kept_tensors, doc_string=graph.doc_string or None,
                                  value_info=value_info,
                                  sparse_initializer=list(graph.sparse_initializer))
    out = onnx.ModelProto()
    for field in ("ir_version", "producer_name", "producer_version", "domain", "model_version",
                  "doc_string"):
        if model.HasField(field):
            setattr(out, field, getattr(model, field))
    out.opset_import.extend(model.opset_import)
    out.metadata_props.extend(model.metadata_props)
    out.functions.extend(model.functions)
    out.graph.CopyFrom(out_graph)
    return out
