"""Native kernel libraries: onnxruntime custom-op libraries (C++ against the headers tf2ir
carries, built at install by `tf2ir.plugins.native_build`) that run plugin ops instead of their
Python kernels.

A plugin declares each library it provides (`tf2ir_native_libraries` hook,
`tf2ir.plugins.native_library`): the file, the ONNX domain and the ops it serves (optionally,
per op, the element types of the first input it serves). The runtime session registers a
library when the model holds one of its ops; such a node runs natively, any other plugin node
by its Python kernel, which also remains the fallback where the library was not built.

Trust: a library runs only because an installed plugin declares it; a model names ops, never
files (docs/reliability.md: Running models you did not make).
"""

from __future__ import annotations

import importlib.machinery
import logging
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from tf2ir.ir.errors import ConversionError

log = logging.getLogger("tf2ir")
NOT_BUILT = "NOT_BUILT"   # plugins/native_build.py writes LIBRARY.NOT_BUILT when it could not build


@dataclass
class NativeLibrary:
    """One native library a plugin provides. `path` is None where it was not built (the Python
    kernels run); `types`: op → the numpy dtype names of its first input it serves (an op
    absent from `types` serves every type its node has)."""
    name: str
    path: Optional[str]
    domain: str
    ops: Tuple[str, ...]
    types: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    why_not_built: str = ""
    plugin: str = ""       # filled by the plugin manager, with source
    source: str = ""
    priority: int = 0

    def describe(self) -> str:
        where = self.path or f"not built: {self.why_not_built or 'no library file'}"
        return f"{self.domain}: {', '.join(self.ops)} ({where})"


def find_library(directory: str, stem: str) -> Tuple[Optional[str], str]:
    """The library `stem` built in `directory` (`stem` + an extension-module suffix, as
    build_ext names it), and why not where it is missing."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(directory, stem + suffix)
        if os.path.isfile(path):
            return path, ""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        marker = os.path.join(directory, stem + suffix + "." + NOT_BUILT)
        if os.path.isfile(marker):
            with open(marker, errors="replace") as f:
                return None, f.read(2000).strip()
    return None, f"no {stem}{importlib.machinery.EXTENSION_SUFFIXES[0]} in {directory}"


def libraries_for(nodes: Iterable, libraries: Sequence[NativeLibrary],
                  input_type: Callable[[Any], Optional[str]]
                  ) -> Tuple[List[NativeLibrary], Dict[int, NativeLibrary]]:
    """The libraries (in order) that serve some of `nodes` (ONNX NodeProtos), and which
    library serves each node (by id); `input_type(node)` is the numpy dtype name of the
    node's first input, or None (asked only where a library serves some types only)."""
    used: List[NativeLibrary] = []
    served: Dict[int, NativeLibrary] = {}
    for node in nodes:
        for library in libraries:
            if node.domain != library.domain or node.op_type not in library.ops:
                continue
            if library.path is None:
                _say_not_built(library)
                continue
            allowed = library.types.get(node.op_type)
            if allowed is not None and input_type(node) not in allowed:
                continue
            served[id(node)] = library
            if library not in used:
                used.append(library)
            break
    return used, served


_SAID: Set[Tuple[str, str, str]] = set()


def _say_not_built(library: NativeLibrary) -> None:
    """Once per process and library: a model needs a library that was not built at install."""
    key = (library.plugin, library.name, library.domain)
    if key not in _SAID:
        _SAID.add(key)
        log.warning("plugin %s's native library %s is not built (%s): its %s ops run by their "
                    "Python kernels", library.plugin or "?", library.name,
                    library.why_not_built or "no library file", library.domain)


def register(options, library: NativeLibrary) -> None:
    """Register `library` with onnxruntime SessionOptions `options`; a library that fails to
    load is one error naming the plugin and the file."""
    try:
        options.register_custom_ops_library(library.path)
    except Exception as exc:
        message = " ".join(str(exc).split())[:400]
        raise ConversionError(f"native library {library.path} failed to load: {message}",
                              plugin=library.plugin or None) from None
