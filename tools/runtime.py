"""`tf2ir.InferenceSession` and `tf2ir run`: onnxruntime with the installed plugins' kernels.

The session itself is the ONNX backend's (ir/onnx/runtime.py); this module gives it the
kernels of the prototypes the plugin manager collected (the installed plugins and
`--plugin-dir`s), so a model with plugin ops runs where the plugins are installed.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Dict, List, Optional, Sequence, Union

import numpy as np

from tf2ir.ir.errors import ConversionError, ExitStatus


def InferenceSession(model, providers: Optional[Sequence[str]] = None, sess_options=None,
                     manager=None, prototypes=None, native: bool = True):
    """An onnxruntime session for a tf2ir model (path, ModelProto or its bytes) whose plugin
    ops run by the native libraries and kernels of `manager`'s plugins, or of the plugins
    behind prototype table `prototypes` (a pipeline's: `tf2ir.ir.prototype.prototypes_of(graph)`);
    default: the default plugin manager's (every installed plugin and TF2IR_PLUGIN_PATH's).
    A node runs natively where a plugin's library serves its op (`native_ops` counts them),
    else by its Python kernel (`python_ops`); `native=False` loads no native library, so every
    plugin node runs by its Python kernel."""
    from tf2ir.ir.onnx.runtime import InferenceSession as Session
    from tf2ir.ir.onnx.runtime import declare_signatures
    from tf2ir.ir.onnx.runtime import table_kernels
    if isinstance(model, (bytes, bytearray)):   # as onnxruntime takes it
        import onnx
        model = onnx.ModelProto.FromString(bytes(model))
    elif isinstance(model, os.PathLike):
        model = os.fspath(model)
    from tf2ir.plugins.manager import PluginManager, default_manager
    if manager is not None:
        prototypes = manager.prototype_table
    elif prototypes is None:
        prototypes = default_manager().prototype_table
    source = prototypes.source
    owner = source if isinstance(source, PluginManager) else default_manager()
    kernels = table_kernels(prototypes)

    def kernel_for(node):
        """A kernel from the table of the plugins' prototypes, by the node's op type (never
        by a name the model chooses), with the plugin that declares it."""
        if node.domain == FALLBACK_DOMAIN and node.op_type == "TFSubgraph":
            return tensorflow_segment(node), SEGMENT_PLUGIN
        return kernels(node)
    declare_signatures(lambda: kernel_signatures(owner))
    return Session(model, kernel_for=kernel_for, providers=providers, sess_options=sess_options,
                   native=owner.native_libraries if native else ())


def kernel_paths(session) -> str:
    """One line: how many plugin nodes of `session` ran natively (and by which library
    files) and how many by Python kernels (`tf2ir run -v`)."""
    files = ", ".join(os.path.basename(p) for p in session.native_libraries)
    return (f"plugin nodes: {session.native_ops} native" + (f" ({files})" if files else "")
            + f", {session.python_ops} by Python kernels")


def native_rows(manager) -> List[dict]:
    """The native kernel libraries of `manager`'s plugins, one row each (`tf2ir plugins`):
    the plugin, its domain and ops, the file, or why it was not built."""
    return [{"kind": "native_library", "origin_op_type": None, "plugin": library.plugin,
             "source": library.source, "name": library.name, "domain": library.domain,
             "ops": list(library.ops), "types": {op: list(t) for op, t in library.types.items()},
             "priority": library.priority, "file": library.path,
             "not_built": None if library.path else
             (library.why_not_built or "no library file")}
            for library in manager.native_libraries]


def kernel_signatures(manager) -> list:
    """(input dtypes, output dtypes) of every op `manager`'s plugins declare with a Python
    kernel and ports of one dtype each (asked once per process, when the first model with
    Python kernels is loaded: the dispatch pool, ir/onnx/runtime.py)."""
    signatures = []
    for prototype in manager.all_prototypes().values():
        ports = list(prototype.inputs) + list(prototype.outputs)
        if prototype.kernel_fn is None or not prototype.inputs or any(
                p.kind != "required" or not p.dtypes or len(p.dtypes) != 1 for p in ports):
            continue
        signatures.append(([p.dtypes[0] for p in prototype.inputs],
                           [p.dtypes[0] for p in prototype.outputs]))
    return signatures


FALLBACK_DOMAIN = "ai.tf2ir.tf"
SEGMENT_PLUGIN = "TensorFlow (--fallback tf)"


def tensorflow_segment(node):
    """The kernel of a fallback segment (a TFSubgraph node): its GraphDef in a TensorFlow
    session of its own, made on the first call; takes the inputs, returns the outputs.

    Checked here, when the session is built and before TensorFlow sees anything: the
    GraphDef holds only op types a segment may run (ir/onnx/trust.py), its inputs are
    Placeholders, one per input of the node, and it gives one tensor per output."""
    import base64
    import binascii

    from onnx import helper

    from tf2ir.ir.onnx import trust
    from tf2ir.parser.graph_view import graph_def_class

    def refuse(message: str) -> ConversionError:
        return ConversionError(f"fallback segment: {message}", node=node.name or None,
                               op_type=f"{node.domain}:{node.op_type}",
                               plugin=SEGMENT_PLUGIN)
    try:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        graph_def = base64.b64decode(attrs["graph_def"], validate=True)
        feeds = [n.decode() for n in attrs["input_names"]]
        fetches = [n.decode() for n in attrs["output_names"]]
        parsed = graph_def_class()()
        parsed.ParseFromString(graph_def)
    except KeyError as exc:
        raise refuse(f"the node has no attribute {exc}") from None
    except (binascii.Error, ValueError, TypeError, AttributeError) as exc:
        raise refuse(f"its attributes do not hold a GraphDef and tensor names "
                     f"({type(exc).__name__}: {exc})") from None
    except Exception as exc:   # protobuf's DecodeError
        raise refuse(f"graph_def is not a GraphDef ({type(exc).__name__})") from None
    refused = trust.refusals(parsed)
    if refused:
        raise refuse(f"the GraphDef holds {trust.refusal_text(refused)}; a fallback segment "
                     "may run only op types that compute (docs/reliability.md: Running "
                     "models you did not make)")
    placeholders = {n.name for n in parsed.node if n.op in ("Placeholder", "PlaceholderV2")}
    if len(feeds) != len(node.input) or len(fetches) != len(node.output):
        raise refuse(f"the node has {len(node.input)} inputs and {len(node.output)} outputs, "
                     f"its graph takes {len(feeds)} and gives {len(fetches)}")
    strays = [n for n in feeds if n not in placeholders]
    if strays or len(set(feeds)) != len(feeds):
        raise refuse(f"input_names must name distinct Placeholders of the graph, not "
                     f"{', '.join(repr(n) for n in strays) or 'one twice'}")
    state = {}

    def run(*arrays, **_):
        if "session" not in state:
            from tf2ir.parser.frozen import import_tensorflow
            tf = import_tensorflow()
            graph = tf.Graph()
            with graph.as_default():
                tf.compat.v1.import_graph_def(tf.compat.v1.GraphDef.FromString(graph_def),
                                              name="")
            state["session"] = tf.compat.v1.Session(graph=graph)
        results = state["session"].run(fetches, {f"{n}:0": a for n, a in zip(feeds, arrays)})
        return tuple(results) if len(results) > 1 else results[0]
    return run


def add_parser(subparsers) -> argparse.ArgumentParser:
    from tf2ir.tools.options import EPILOG, add_common
    parser = subparsers.add_parser(
        "run", help="run an ONNX model tf2ir wrote in onnxruntime (plugin ops included)",
        description="Run an ONNX model in onnxruntime with the kernels of the installed "
                    "plugins' ops registered, on the given inputs; print each output's "
                    "shape and dtype, or write them all to an .npz. A plugin op runs by the "
                    "native library its plugin ships where it was built, else by its Python "
                    "kernel (-v says how many nodes ran each way).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="an .onnx model")
    parser.add_argument("--inputs-data", action="append", default=[], required=True,
                        metavar="FILE.npz|NAME=FILE.npy",
                        help="input values: an .npz keyed by input name, or NAME=FILE.npy "
                             "(repeatable)")
    parser.add_argument("-o", "--output", help="write the outputs to this .npz, keyed by name")
    parser.add_argument("--no-native", dest="native", action="store_false",
                        help="load no plugin's native kernel library: every plugin op runs by "
                             "its Python kernel")
    add_common(parser)
    return parser


def run(args) -> int:
    import os
    from tf2ir.ir.atomic import atomic_output, check_output_path
    if not os.path.isfile(args.model):
        raise ConversionError("file does not exist", model=args.model,
                              exit_code=ExitStatus.USAGE)
    if args.output:
        check_output_path(args.output, [args.model] + list(args.inputs_data))
    from tf2ir.tools.options import plugin_manager
    feeds = load_inputs_data(args.inputs_data)
    session = _session(args.model, plugin_manager(args), getattr(args, "native", True))
    if args.verbose:
        print(kernel_paths(session), file=sys.stderr)
    names = [i.name for i in session.get_inputs()]
    missing = [n for n in names if n not in feeds]
    extra = sorted(set(feeds) - set(names))
    if missing or extra:
        raise ConversionError(f"the model's inputs are {', '.join(names)}; --inputs-data "
                              + (f"lacks {', '.join(missing)}" if missing else
                                 f"names {', '.join(extra)}, which the model does not take"),
                              model=args.model, exit_code=ExitStatus.USAGE)
    results = _run(session, args.model, {n: feeds[n] for n in names})
    if args.output:
        with atomic_output(args.output) as tmp:
            with open(tmp, "wb") as f:
                np.savez(f, **results)
    for name, value in results.items():
        print(f"{name}  {value.dtype}  {list(value.shape)}")
    return 0


def load_inputs_data(items: Sequence[str]) -> Dict[str, np.ndarray]:
    data = {}
    for item in items:
        name, sep, path = item.partition("=")
        try:
            if sep:
                data[name.split(":")[0]] = np.load(path, allow_pickle=False)
            else:
                with np.load(item, allow_pickle=False) as archive:
                    data.update({key.split(":")[0]: archive[key] for key in archive.files})
        except (OSError, ValueError) as exc:
            raise ConversionError(f"cannot read --inputs-data {item!r}: {exc}",
                                  exit_code=ExitStatus.USAGE) from None
    return data


def _session(path: str, manager, native: bool = True):
    try:
        return InferenceSession(path, manager=manager, native=native)
    except ConversionError as exc:
        raise exc.located(model=path)
    except Exception as exc:   # onnxruntime's refusal of the model: one line
        raise ConversionError(f"onnxruntime cannot load the model: {_first_line(exc)}",
                              model=path, exit_code=ExitStatus.FAILED) from None


def _run(session, path: str, feeds: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
    inputs = {i.name: i for i in session.get_inputs()}
    try:
        arrays = {n: _as_input(v, inputs[n].type) for n, v in feeds.items()}
        values = session.run(None, arrays)
    except ConversionError as exc:   # a kernel's failure (KernelError): its own line
        raise exc.located(model=path)
    except Exception as exc:
        raise ConversionError(f"onnxruntime failed: {_first_line(exc)}", model=path,
                              exit_code=ExitStatus.FAILED) from None
    return {o.name: v for o, v in zip(session.get_outputs(), values)}


def _as_input(value: np.ndarray, onnx_type: str) -> Union[np.ndarray, object]:
    table = {"tensor(float)": np.float32, "tensor(double)": np.float64,
             "tensor(int32)": np.int32, "tensor(int64)": np.int64, "tensor(bool)": np.bool_,
             "tensor(float16)": np.float16, "tensor(int8)": np.int8, "tensor(uint8)": np.uint8}
    dtype = table.get(onnx_type)
    return np.asarray(value).astype(dtype, copy=False) if dtype else value


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
