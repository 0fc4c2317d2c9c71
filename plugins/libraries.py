"""`native_library(...)`: what a plugin's `tf2ir_native_libraries` hook returns for each native
kernel library it ships (built at install by `tf2ir.plugins.native_build`)."""

from __future__ import annotations

import os
from typing import Dict, List, Mapping, Optional, Sequence

from tf2ir.ir.errors import ConversionError

from tf2ir.ir.onnx.native import NativeLibrary, find_library


def native_library(directory: str, name: str, domain: str, ops: Sequence[str],
                   types: Optional[Mapping[str, Sequence[str]]] = None) -> NativeLibrary:
    """The library `name` (the last part of its `native_extension` name) built in `directory`
    (the plugin module's folder: `os.path.dirname(__file__)`), serving `ops` of ONNX domain
    `domain`; `types` limits an op to the numpy dtype names of its first input the library's
    kernels take (the other nodes of the op run by its Python kernel).

    A library that was not built (no compiler at install) is declared all the same, with no
    file: `tf2ir plugins` shows why, and the ops run by their Python kernels."""
    if not isinstance(domain, str) or not domain or not ops:
        raise ValueError("native_library(...) needs a domain and the ops it serves")
    path, why = find_library(os.path.abspath(directory), name)
    return NativeLibrary(name=name, path=path, domain=domain, ops=tuple(ops),
                         types={op: tuple(t) for op, t in (types or {}).items()},
                         why_not_built=why)


def ordered_libraries(libraries: Sequence[NativeLibrary]) -> List[NativeLibrary]:
    """`libraries` highest priority first (the runtime takes the first that serves a node);
    two serving one op of one domain with equal priority are an error, as op mappings are."""
    libraries = sorted(libraries, key=lambda library: -library.priority)
    claims: Dict[str, List[NativeLibrary]] = {}
    for library in libraries:
        for op in library.ops:
            claims.setdefault(f"{library.domain}:{op}", []).append(library)
    for key, claimed in claims.items():
        if len(claimed) > 1 and claimed[0].priority == claimed[1].priority:
            raise ConversionError(
                f"native op {key} is served by the libraries of {claimed[0].plugin} and "
                f"{claimed[1].plugin} with equal priority {claimed[0].priority}; give one a "
                "higher priority (NativeLibrary.priority)", op_type=key, plugin=claimed[0].plugin)
    return libraries
