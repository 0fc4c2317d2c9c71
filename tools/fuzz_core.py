"""What the fuzz harness (tools/fuzz.py) and its modes (tools/fuzz_saved_model.py,
tools/fuzz_manifest.py) share: protobuf values and GraphDefs built without TensorFlow, the
seed corpus they mutate, the exceptions a case raises for each defect outcome, and the check
of a written model. The harness (tools/fuzz.py and the modules it is split into) imports its
modes and the modes import this module (and tools/fuzz_mutate.py), never the harness: the
imports go one way, and the exception classes run_case catches are the ones the modes raise,
however the harness was started."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np


# == protobuf values ========================================================================
class Dt(str):
    """A dtype attribute value (its IR name) for `_attr`."""


class Shp(tuple):
    """A shape attribute value (None: an unknown dim) for `_attr`."""


class Fn(str):
    """A function attribute value (the function's name) for `_attr`."""


def _dtype_enum(name: str) -> int:
    from tf2ir.parser.attrs import TF_DTYPES
    return {v: k for k, v in TF_DTYPES.items()}[name]


def _shape_proto(dims, proto=None):
    from tensorboard.compat.proto import tensor_shape_pb2
    proto = proto if proto is not None else tensor_shape_pb2.TensorShapeProto()
    proto.SetInParent()   # a scalar's shape is an empty but present message
    if dims is None:
        proto.unknown_rank = True
    for d in dims or ():
        proto.dim.add(size=-1 if d is None else int(d))
    return proto


def _tensor_proto(array: np.ndarray, proto=None):
    from tensorboard.compat.proto import tensor_pb2
    proto = proto if proto is not None else tensor_pb2.TensorProto()
    array = np.asarray(array)
    if array.dtype.kind in "SUO":
        proto.dtype = _dtype_enum("string")
        proto.string_val.extend(str(v).encode() if not isinstance(v, bytes) else v
                                for v in array.ravel())
    else:
        from tf2ir.ir.tensor import dtype_of_numpy
        proto.dtype = _dtype_enum(dtype_of_numpy(array.dtype))
        proto.tensor_content = np.ascontiguousarray(array).astype(
            array.dtype.newbyteorder("<")).tobytes()
    _shape_proto(array.shape, proto.tensor_shape)
    return proto


def _attr(value, proto=None):
    """A Python value → AttrValue: bool b, int i, float f, str s, Dt type, Shp shape,
    ndarray tensor, Fn func, lists of those."""
    from tensorboard.compat.proto import attr_value_pb2
    proto = proto if proto is not None else attr_value_pb2.AttrValue()
    if isinstance(value, bool):
        proto.b = value
    elif isinstance(value, (int, np.integer)):
        proto.i = int(value)
    elif isinstance(value, float):
        proto.f = value
    elif isinstance(value, Dt):
        proto.type = _dtype_enum(value)
    elif isinstance(value, Fn):
        proto.func.name = value
    elif isinstance(value, str):
        proto.s = value.encode()
    elif isinstance(value, Shp):
        _shape_proto(value, proto.shape)
    elif isinstance(value, np.ndarray):
        _tensor_proto(value, proto.tensor)
    elif isinstance(value, list):
        lst = proto.list
        lst.SetInParent()
        for item in value:
            if isinstance(item, bool):
                lst.b.append(item)
            elif isinstance(item, int):
                lst.i.append(item)
            elif isinstance(item, float):
                lst.f.append(item)
            elif isinstance(item, Dt):
                lst.type.append(_dtype_enum(item))
            elif isinstance(item, Shp):
                _shape_proto(item, lst.shape.add())
            elif isinstance(item, Fn):
                lst.func.add(name=item)
            else:
                lst.s.append(str(item).encode())
    else:
        raise TypeError(f"no AttrValue for {value!r}")
    return proto


# == GraphDefs ===============================================================================
class GraphBuilder:
    """A small GraphDef under construction, without TensorFlow."""

    def __init__(self, name: str):
        from tensorboard.compat.proto import graph_pb2
        self.name = name
        self.graph = graph_pb2.GraphDef()
        self.graph.versions.producer = 1882
        self._count = 0

    def _name(self, base: str) -> str:
        self._count += 1
        return f"{base}_{self._count}"

    def node(self, op: str, inputs: Sequence[str] = (), name: Optional[str] = None,
             nodes=None, **attrs) -> str:
        target = self.graph.node if nodes is None else nodes
        node = target.add(name=name or self._name(op.lower()), op=op, input=list(inputs))
        for key, value in attrs.items():
            if value is not None:
                _attr(value, node.attr[key])
        return node.name

    def ph(self, dtype: str = "float32", shape=(2, 3), name: Optional[str] = None) -> str:
        return self.node("Placeholder", (), name or self._name("x"), dtype=Dt(dtype),
                         shape=Shp(shape) if shape is not None else None)

    def const(self, value, dtype: Optional[str] = None, name: Optional[str] = None) -> str:
        array = np.asarray(value, dtype=dtype)
        from tf2ir.ir.tensor import dtype_of_numpy
        kind = "string" if array.dtype.kind in "SUO" else dtype_of_numpy(array.dtype)
        return self.node("Const", (), name or self._name("c"), dtype=Dt(kind), value=array)

    def op(self, op: str, *inputs: str, T: Optional[str] = "float32", name: Optional[str] = None,
           **attrs) -> str:
        return self.node(op, inputs, name, **({"T": Dt(T)} if T else {}), **attrs)

    def function(self, name: str, args: Sequence[Tuple[str, str]], results: Sequence[Tuple[str, str]],
                 body: Callable[["GraphBuilder", Any], Dict[str, str]]) -> None:
        """Add a FunctionDef: `body(builder, nodes)` adds nodes (names of args and
        "node:out:0" references as inputs) and returns {result: reference}."""
        fdef = self.graph.library.function.add()
        fdef.signature.name = name
        for arg, dtype in args:
            fdef.signature.input_arg.add(name=arg, type=_dtype_enum(dtype))
        for res, dtype in results:
            fdef.signature.output_arg.add(name=res, type=_dtype_enum(dtype))
        for key, ref in body(self, fdef.node_def).items():
            fdef.ret[key] = ref

    def serialize(self) -> bytes:
        return self.graph.SerializeToString(deterministic=True)


# == the corpus =============================================================================
@dataclass
class Corpus:
    """What cases are mutated from: GraphDefs (name, bytes), their IR files (name, text,
    weights), the op types tf2ir knows and a pool of IR tokens."""

    graphs: List[Tuple[str, bytes]]
    irs: List[Tuple[str, str, bytes]]
    op_types: List[str]
    ir_tokens: List[str]
    ir_lines: List[str]
    saved_models: List[Tuple[str, Dict[str, bytes]]] = field(default_factory=list)


# == outcomes ===============================================================================
class CaseTimeout(BaseException):
    """Raised by SIGALRM inside a case (a BaseException, so `except Exception` in the code
    under test does not swallow it; the alarm also sets a flag, in case something does)."""


class InvalidModel(Exception):
    """The written model fails onnx.checker.check_model(full_check=True)."""


class SilentCorruption(Exception):
    """Checkpoint bytes TensorFlow checksums were changed, and the conversion succeeded with
    a model that differs from the unmutated seed's (savedmodel kind)."""


class Escape(Exception):
    """A file outside the input's root was read into the model (savedmodel kind), or a file
    outside -o was written or would have been (manifest kind)."""


class BatchInternalError(Exception):
    """batch reported "internal error: TYPE: ..." for a model (it catches the exception)."""

    @property
    def kind(self) -> str:
        parts = str(self).split(":", 2)
        return parts[1].strip() if len(parts) > 1 else "?"


# == the written model ======================================================================
OUTPUT_NAME = "out.onnx"


def _first_line(text: str, limit: int = 300) -> str:
    line = next((s for s in text.splitlines() if s.strip()), "")
    return line[:limit]


def check_model_file(path: str) -> None:
    import onnx
    if not os.path.isfile(path):
        raise InvalidModel("compile returned but wrote no model")
    try:
        model = onnx.load(path)
        # The writer's own policy (ir/onnx/writer.py, documented in docs/reliability.md): an output of
        # unknown rank has no shape, which the checker wants and onnxruntime does not;
        # such outputs are left out of the check, everything else is checked in full.
        shapeless = [i for i, v in enumerate(model.graph.output)
                     if v.type.HasField("tensor_type") and not v.type.tensor_type.HasField("shape")]
        for index in reversed(shapeless):
            del model.graph.output[index]
        onnx.checker.check_model(model, full_check=True)
    except Exception as exc:
        raise InvalidModel(f"{type(exc).__name__}: {_first_line(str(exc))}") from None


def _clean(workdir: str) -> None:
    for name in os.listdir(workdir):
        if name == "stderr.log":
            continue
        path = os.path.join(workdir, name)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                import shutil
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except OSError:
            pass
