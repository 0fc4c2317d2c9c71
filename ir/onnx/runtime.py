"""The runtime entry: an onnxruntime session for the models tf2ir writes, with the ops that
standard onnxruntime lacks made runnable.

A plugin op lowers to a node of the plugin's own ONNX domain (the seed's custom-op domain).
Where an installed plugin declares a native library serving the node's op (ir/onnx/native.py),
the session registers the library and onnxruntime runs the node natively. Otherwise, when its
prototype carries a reference kernel (`OpPrototype.kernel`), this session gives
onnxruntime that kernel as a Python custom op through onnxruntime-extensions: in the
in-memory copy of the model only, the node becomes a dispatch op of the extensions' domain
for its input and output types, whose `kernel` attribute names the Python body (the kernel
with the node's attributes). The model file stays as written, in the plugin's domain.

onnxruntime-extensions keeps its Python ops in one process-wide table, and a session made
with it breaks (a crash, not an error) when that table grows afterwards. So the dispatch
ops are registered as one pool when the first session needs them (`_pool`: every signature
of 1-4 inputs and 1-2 outputs of one type, and the string ops' mixed ones); a model that needs another signature gets it registered
only while no session with Python ops is alive, and is refused with a clear error otherwise.

Nodes of the extensions' own domain (`ai.onnx.contrib`: its string kernels, which the
string ops lower to) run with its library registered. `kernel_for(node)` decides which
nodes get a Python body: by default the prototype
registry's kernels (filled by the plugin manager); `tf2ir.InferenceSession` adds the TF
fallback segments.

What a model may make this session run (docs/reliability.md: "Running models you did not make"):
- Python bodies only from the table `kernel_for` fills, bound by this session. A model that
  names a dispatch op itself (`ai.onnx.contrib:tf2ir_py_*`, whose `kernel` attribute picks a
  body by key) is refused when the session is built; a key with no body is a recorded
  failure, never an exception.
- Nothing a kernel does crosses into onnxruntime (an exception there aborts the process):
  every body checks the count, dtypes and shapes of its inputs and results against what the
  model declares (value_info, static dims), and records a failure, which `run` raises as a
  KernelError naming the node, its op and plugin.
- While onnxruntime runs Python bodies, SIGINT/SIGTERM/SIGHUP handlers are held
  (`held_signals`, ir/onnx/guard.py): a signal is recorded, the bodies still to come are skipped, and the
  handler runs when onnxruntime has returned, where what it raises unwinds as Python.
"""

from __future__ import annotations

import itertools
import os
import threading
import weakref
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import onnx
from onnx import helper, numpy_helper

from tf2ir.ir.errors import ConversionError
from tf2ir.ir.onnx.guard import SIGNALLED, Mismatch, checked, first_line, held_signals, stand_ins
from tf2ir.ir.onnx.model_info import (Declared, input_type_of, refuse_undecodable_strings,
                                      value_infos)
from tf2ir.ir.onnx.native import NativeLibrary, libraries_for
from tf2ir.ir.onnx.native import register as register_library
from tf2ir.ir.onnx.node import walk_protos

STANDARD_DOMAINS = ("", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training", "com.microsoft",
                    "ai.onnx.contrib")
EXTENSIONS_DOMAIN = "ai.onnx.contrib"
DISPATCH_PREFIX = "tf2ir_py_"   # the dispatch ops' names: a model may not use them itself
# kernel_for(node): None, the node's Python kernel, or (kernel, the plugin that declares it)
KernelFor = Callable[[onnx.NodeProto], Union[None, Callable, Tuple[Callable, str]]]
TableKernelFor = Callable[[onnx.NodeProto], Optional[Tuple[Callable, str]]]   # table_kernels'
Signature = Tuple[Tuple[int, ...], Tuple[int, ...]]   # PyCustomOpDef input and output types
_DISPATCH: Dict[Signature, str] = {}   # signature → its registered dispatch op type
_BODIES: Dict[str, Callable] = {}      # a node's `kernel` attribute → its Python body
_LIVE: "weakref.WeakSet[InferenceSession]" = weakref.WeakSet()   # sessions with Python ops
POOL_TYPES = ("dt_float", "dt_double", "dt_float16", "dt_int32", "dt_int64", "dt_bool",
              "dt_uint8", "dt_int8")
_FAILURES: List[str] = []               # what the kernels of the current run raised
_FAILURES_LOCK = threading.Lock()


class KernelError(ConversionError):
    """A plugin op's Python kernel (or a fallback segment) failed while the model ran: a
    failure of the plugin, which the command line reports in one line (exit 1)."""


def _fail(message: str) -> None:
    with _FAILURES_LOCK:
        _FAILURES.append(message)


def _raise_kernel_failure() -> None:
    with _FAILURES_LOCK:
        failure = _FAILURES[0] if _FAILURES else None
        _FAILURES.clear()
    if failure is not None:
        raise KernelError(failure)


def table_kernels(table) -> TableKernelFor:
    """`kernel_for` reading prototype table `table` (a plugin manager's PrototypeRegistry):
    the reference kernel of the IR op a custom-domain node stands for, by the node's op type,
    with the plugin that declares it; None where the table declares none."""
    def kernel_for(node: onnx.NodeProto) -> Optional[Tuple[Callable, str]]:
        if node.domain in STANDARD_DOMAINS:
            return None
        prototype = table.find(node.op_type)
        if prototype is None or prototype.kernel_fn is None:
            return None
        return prototype.kernel_fn, prototype.plugin
    return kernel_for


def registry_kernel(node: onnx.NodeProto) -> Optional[Tuple[Callable, str]]:
    """The reference kernel of the IR op a custom-domain node stands for, if the default
    prototype table declares one (a session for a pipeline's model: `table_kernels`)."""
    from tf2ir.ir.prototype import default_prototypes
    return table_kernels(default_prototypes())(node)


class InferenceSession:
    """onnxruntime.InferenceSession for a tf2ir model (a path or a ModelProto): the same
    `run`, `get_inputs`, `get_outputs`; plugin ops run by the `native` libraries that serve
    them (ir/onnx/native.py), the others by their Python kernels (`kernel_for`).
    `native_ops` and `python_ops` count the nodes each way runs."""

    def __init__(self, model: Union[str, onnx.ModelProto], kernel_for: KernelFor = registry_kernel,
                 libraries: Sequence[str] = (), providers: Optional[Sequence[str]] = None,
                 sess_options=None, native: Sequence[NativeLibrary] = ()):
        import onnxruntime as ort
        self.python_ops = 0
        self.native_ops = 0      # plugin nodes a native library runs
        self.native_libraries: List[str] = []   # the files of the libraries registered
        self._native_nodes: Dict[Tuple[str, str], str] = {}   # (op, node) → its library's plugin
        self._keys: List[str] = []
        options = sess_options or ort.SessionOptions()
        for path in libraries:
            options.register_custom_ops_library(path)
        proto = onnx.load(model, load_external_data=False) if isinstance(model, str) else model
        _refuse_dispatch_nodes(proto)
        source: Union[str, bytes] = model if isinstance(model, str) else proto.SerializeToString()
        if any(n.domain not in STANDARD_DOMAINS for n in _all_nodes(proto.graph)):
            if not isinstance(model, str):
                proto = _copy(proto)   # the caller's model stays as it is
            custom = [n for n in _all_nodes(proto.graph) if n.domain not in STANDARD_DOMAINS]
            used, served = libraries_for(custom, native, input_type_of(proto))
            for library in used:   # a native kernel runs where a library serves the node
                if library.path not in self.native_libraries:   # one file may serve domains
                    register_library(options, library)
                    self.native_libraries.append(str(library.path))
            self.native_ops = len(served)
            if served and sess_options is None:   # its failure is the KernelError run raises
                options.log_severity_level = 4
            self._native_nodes = {(n.op_type, n.name): served[id(n)].plugin
                                  for n in custom if id(n) in served}
            bodies = []
            for node in custom:
                kernel = kernel_for(node) if id(node) not in served else None
                if kernel is not None:
                    bodies.append((node, kernel))
            if bodies:
                from onnxruntime_extensions import get_library_path
                if sess_options is None:   # a failed kernel's stand-in outputs are not news
                    options.log_severity_level = 3
                if isinstance(model, str):
                    from onnx.external_data_helper import load_external_data_for_model
                    load_external_data_for_model(proto, os.path.dirname(os.path.abspath(model)))
                refuse_undecodable_strings(proto, bodies[0][0])
                declared = value_infos(proto)
                self._keys = [_bind(node, kernel, declared, f"{id(self)}/{i}")
                              for i, (node, kernel) in enumerate(bodies)]
                _LIVE.add(self)
                if not any(o.domain == EXTENSIONS_DOMAIN for o in proto.opset_import):
                    proto.opset_import.append(helper.make_opsetid(EXTENSIONS_DOMAIN, 1))
                options.register_custom_ops_library(get_library_path())
                source = proto.SerializeToString()
                self.python_ops = len(bodies)
        if not self.python_ops and any(n.domain == EXTENSIONS_DOMAIN
                                       for n in _all_nodes(proto.graph)):
            from onnxruntime_extensions import get_library_path   # its string kernels
            options.register_custom_ops_library(get_library_path())
        self._session = ort.InferenceSession(source, options,
                                             providers=list(providers or ["CPUExecutionProvider"]))

    def run(self, output_names, input_feed, run_options=None) -> List[np.ndarray]:
        """onnxruntime's run; a Python kernel that failed raises KernelError naming its node
        (a Python exception must not cross into onnxruntime, which would abort)."""
        with _FAILURES_LOCK:
            _FAILURES.clear()
        with held_signals(self.python_ops > 0):
            try:
                results = self._session.run(output_names, input_feed, run_options)
            except Exception as exc:
                _raise_kernel_failure()
                self._raise_native_failure(exc)
                raise
            _raise_kernel_failure()
        return results

    def _raise_native_failure(self, exc: Exception) -> None:
        """A native kernel's failed status (onnxruntime names the node and op) as a KernelError
        naming the plugin whose library runs it."""
        message = first_line(exc)
        for (op_type, node_name), plugin in self._native_nodes.items():
            if f"running {op_type} node. Name:'{node_name}'" in message:
                where = f"the native kernel of {op_type} node '{node_name}' (plugin {plugin})"
                detail = message.split("Status Message:", 1)[-1].strip()
                raise KernelError(f"{where} failed: {detail}") from None

    def __getattr__(self, name):
        if name == "_session":   # a failed __init__: there is none
            raise AttributeError(name)
        return getattr(self._session, name)

    def __del__(self):
        bodies = _BODIES   # None when the interpreter is tearing the module down
        for key in getattr(self, "_keys", ()):
            if bodies is not None:
                bodies.pop(key, None)


def _copy(proto: onnx.ModelProto) -> onnx.ModelProto:
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    return copy


def _all_nodes(graph: onnx.GraphProto):
    return _walk(graph.node)


_walk = walk_protos      # (ir/onnx/node.py: the one walk over ONNX subgraphs)


def _refuse_dispatch_nodes(proto: onnx.ModelProto) -> None:
    """A model may not name this runtime's dispatch ops: their `kernel` attribute picks a
    Python body by key, which only the session binds (module docstring)."""
    functions = _walk(n for function in proto.functions for n in function.node)
    for node in itertools.chain(_all_nodes(proto.graph), functions):
        if node.domain == EXTENSIONS_DOMAIN and node.op_type.startswith(DISPATCH_PREFIX):
            raise ConversionError(
                f"the model names tf2ir's own kernel dispatch op {node.domain}:{node.op_type}, "
                "which picks a Python body by its `kernel` attribute; a model may only hold "
                "the ops of installed plugins, whose kernels the runtime binds itself",
                node=node.name or None, op_type=node.op_type)


def _python_attrs(node: onnx.NodeProto) -> Dict[str, object]:
    attrs: Dict[str, object] = {}
    for attr in node.attribute:
        value = helper.get_attribute_value(attr)
        if isinstance(value, bytes):
            value = value.decode("utf-8", "surrogateescape")
        elif isinstance(value, onnx.TensorProto):
            value = numpy_helper.to_array(value)
        elif isinstance(value, list):
            value = [v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) else v
                     for v in value]
        attrs[attr.name] = value
    return attrs


_PY_TYPES = {"float32": "dt_float", "float64": "dt_double", "float16": "dt_float16",
             "int8": "dt_int8", "int16": "dt_int16", "int32": "dt_int32", "int64": "dt_int64",
             "uint8": "dt_uint8", "uint16": "dt_uint16", "uint32": "dt_uint32",
             "uint64": "dt_uint64", "bool": "dt_bool", "object": "dt_string"}


def _pycustom_type(elem_type: int, node: onnx.NodeProto, name: str):
    from onnxruntime_extensions import PyCustomOpDef
    numpy_name = helper.tensor_dtype_to_np_dtype(elem_type).name if elem_type else None
    table = _PY_TYPES
    if numpy_name not in table:
        raise ConversionError(f"value {name!r} of {node.domain}:{node.op_type} node "
                              f"'{node.name}' has no known element type for a Python kernel "
                              f"({numpy_name or 'unknown'})")
    return getattr(PyCustomOpDef, table[numpy_name]), helper.tensor_dtype_to_np_dtype(elem_type)


def _dispatch_op(inputs: Sequence[int], outputs: Sequence[int], node: onnx.NodeProto) -> str:
    """The dispatch op for these PyCustomOpDef types (module docstring: the pool)."""
    from onnxruntime_extensions import PyCustomOpDef
    signature = (tuple(inputs), tuple(outputs))
    if not _DISPATCH:
        declared = [(tuple(getattr(PyCustomOpDef, _PY_TYPES[_numpy_name(t)]) for t in ins),
                     tuple(getattr(PyCustomOpDef, _PY_TYPES[_numpy_name(t)]) for t in outs))
                    for ins, outs in (_SIGNATURES() if _SIGNATURES else ())
                    if all(_numpy_name(t) in _PY_TYPES for t in (*ins, *outs))]
        for pooled in dict.fromkeys(_pool(PyCustomOpDef) + declared):
            _register(pooled)
    if signature not in _DISPATCH:
        if any(session.python_ops for session in list(_LIVE)):
            raise ConversionError(
                f"{node.domain}:{node.op_type} node '{node.name}' needs a Python op of a new "
                "signature, which onnxruntime-extensions cannot add while another model with "
                "Python kernels is loaded in this process: load this model first, or in a "
                "process of its own")
        _register(signature)
    return _DISPATCH[signature]


def _numpy_name(dtype: str) -> str:
    return "object" if dtype == "string" else dtype


def declare_signatures(signatures: Callable[[], Sequence[Tuple[Sequence[str], Sequence[str]]]]) -> None:
    """Give the pool, before it is first registered, the Python-kernel signatures (input and
    output dtype names) that the ops the installed plugins declare have (tools/runtime.py:
    every prototype with a kernel whose ports each have one dtype), so a model with them loads
    while other sessions are alive."""
    global _SIGNATURES
    _SIGNATURES = signatures


_SIGNATURES: Optional[Callable[[], Sequence[Tuple[Sequence[str], Sequence[str]]]]] = None


def _pool(types) -> List[Signature]:
    """The signatures registered at once: 1-4 inputs and 1-2 outputs of one type, and the
    string ops' mixed ones (a string in or out beside one number type; Substr's positions;
    StringSplitV2's indices, values and shape)."""
    codes = [getattr(types, name) for name in POOL_TYPES]
    string, i32, i64 = types.dt_string, types.dt_int32, types.dt_int64
    pool: List[Signature] = []
    for code in codes + [string]:
        pool += [((code,) * n_in, (code,) * n_out)
                 for n_in, n_out in itertools.product(range(1, 5), range(1, 3))]
    for code in codes:
        pool += [((string,), (code,)), ((code,), (string,))]
    pool += [((string, i32, i32), (string,)), ((string, i64, i64), (string,)),
             ((string, string), (i64, string, i64)), ((string,), (i64, string, i64))]
    return pool


def _register(signature: Signature) -> None:
    from onnxruntime_extensions import PyCustomOpDef, onnx_op
    name = DISPATCH_PREFIX + "_".join(map(str, signature[0])) + "__" + "_".join(map(str, signature[1]))

    codes = {getattr(PyCustomOpDef, code): np.dtype(name) for name, code in _PY_TYPES.items()}
    out_dtypes = [codes[code] for code in signature[1]]

    def dispatch(*arrays, kernel=""):
        """The body bound to `kernel`; never an exception into onnxruntime."""
        try:
            body = _BODIES.get(kernel)
            if body is not None:
                return body(*arrays)
            if not SIGNALLED:
                _fail(f"no Python kernel is bound to key {kernel!r} in this process")
        except BaseException as exc:   # a body never raises; this is the last guard
            _fail(f"tf2ir's kernel dispatch failed: {type(exc).__name__}: {first_line(exc)}")
        return stand_ins(out_dtypes)
    onnx_op(op_type=name, inputs=list(signature[0]), outputs=list(signature[1]),
            attrs={"kernel": PyCustomOpDef.dt_string})(dispatch)
    _DISPATCH[signature] = name


def _bind(node: onnx.NodeProto, kernel, declared: Dict[str, Declared], key: str) -> str:
    """Make `node` (in the session's copy) the dispatch op of its types, whose body (`key`)
    is `kernel` (or (kernel, plugin)) with the node's attributes."""
    kernel, plugin = kernel if isinstance(kernel, tuple) else (kernel, "")
    attrs = _python_attrs(node)
    ins = [(n, _pycustom_type(declared.get(n, (0, None))[0], node, n), declared.get(n, (0, None))[1])
           for n in node.input]
    outs = [(n, _pycustom_type(declared.get(n, (0, None))[0], node, n), declared.get(n, (0, None))[1])
            for n in node.output]
    out_dtypes = [np_type for _, (_, np_type), _ in outs]
    where = f"{node.domain}:{node.op_type} node '{node.name}'" + (f" (plugin {plugin})"
                                                                  if plugin else "")

    def body(*arrays):
        """The kernel's result; never an exception, which would abort onnxruntime: a failure
        is recorded for `run` to raise, and empty outputs stand in for the results."""
        if SIGNALLED:   # a signal is held: the run ends when onnxruntime returns
            return stand_ins(out_dtypes)
        try:
            if len(arrays) != len(ins):
                raise Mismatch(f"was given {len(arrays)} inputs for the node's {len(ins)}")
            args = [checked(a, np.dtype(t), shape, f"input {i} '{n}'", cast=False)
                    for i, (a, (n, (_, t), shape)) in enumerate(zip(arrays, ins))]
            result = kernel(*args, **attrs)
            results = result if isinstance(result, tuple) else (result,)
            if len(results) != len(outs):
                raise Mismatch(f"returned {len(results)} arrays for {len(outs)} outputs")
            cast = tuple(checked(r, np.dtype(t), shape, f"output {i} '{n}'")
                         for i, (r, (n, (_, t), shape)) in enumerate(zip(results, outs)))
        except Mismatch as exc:
            _fail(f"the Python kernel of {where}: {exc}")
            return stand_ins(out_dtypes)
        except BaseException as exc:
            _fail(f"the Python kernel of {where} failed: "
                  f"{type(exc).__name__}: {first_line(exc)}".rstrip(": "))
            return stand_ins(out_dtypes)
        return cast if len(cast) > 1 else cast[0]

    op_type = _dispatch_op([t for _, (t, _), _ in ins], [t for _, (t, _), _ in outs], node)
    _BODIES[key] = body
    node.op_type, node.domain = op_type, EXTENSIONS_DOMAIN
    del node.attribute[:]
    node.attribute.append(helper.make_attribute("kernel", key))
    return key
