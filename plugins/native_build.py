"""Building native kernel libraries at `pip install`: the setuptools side of a plugin package's
(and tf2ir's own) C++ kernels.

A native library is a standard setuptools `Extension` compiled by `build_ext` against the
headers tf2ir carries (`get_include()`: onnxruntime's C/C++ API, version 21, and
`tf2ir/native.h`). It is not a Python module: onnxruntime loads it by path, and the plugin
declares it (`tf2ir.plugins.native_library`). A package's setup.py:

    from setuptools import setup
    from tf2ir.plugins.native_build import build_native, native_extension

    setup(ext_modules=[native_extension("my_plugin._kernels", ["my_plugin/kernels.cc"])],
          cmdclass={"build_ext": build_native})

Where no C++ compiler works, `build_native` skips the library and says so once: the package
installs, and its ops run by their Python kernels.

This module imports nothing of tf2ir (only the standard library and setuptools), so a setup.py
may load it by path from pip's isolated build environment, where tf2ir is not importable (the
setup.py `tf2ir new-plugin --native` writes asks the interpreter running pip for the path).
"""

from __future__ import annotations

import os
import sys
from typing import List, Sequence

# -O2 and C++17 (the lite custom-op API needs it); hidden symbols but RegisterCustomOps.
COMPILE_ARGS = ["-std=c++17", "-O2", "-fvisibility=hidden", "-fvisibility-inlines-hidden"]
NOT_BUILT = "NOT_BUILT"   # the marker file's suffix beside a library that was not built


def get_include() -> str:
    """The folder to add to the include path: `<onnxruntime/onnxruntime_c_api.h>`,
    `<onnxruntime/onnxruntime_lite_custom_op.h>` and `<tf2ir/native.h>` are under it."""
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(os.path.dirname(here), "ir", "onnx", "include")


def native_extension(name: str, sources: Sequence[str], **kwargs):
    """A setuptools Extension for native library `name` (dotted, as a module: the library is
    built beside the package's modules) from C++ `sources`, with tf2ir's include folder and
    compile flags; extra keyword arguments go to Extension."""
    from setuptools import Extension
    kwargs.setdefault("language", "c++")
    kwargs["include_dirs"] = [get_include()] + list(kwargs.get("include_dirs", []))
    kwargs["extra_compile_args"] = ([] if os.name == "nt" else COMPILE_ARGS) + list(
        kwargs.get("extra_compile_args", []))
    return Extension(name, list(sources), **kwargs)


def _build_ext_class():
    from setuptools.command.build_ext import build_ext

    class build_native(build_ext):
        """build_ext that installs the package without a native library it cannot compile
        (no compiler, a failing one): one message, and the Python kernels run instead."""

        def build_extension(self, ext) -> None:
            marker = self.get_ext_fullpath(ext.name) + "." + NOT_BUILT
            try:
                super().build_extension(ext)
            except Exception as exc:   # CompileError, LinkError, a missing compiler
                reason = " ".join(str(exc).split())[:300] or type(exc).__name__
                message = (f"tf2ir: the native library {ext.name} is not built ({reason}); "
                           "its ops run by their Python kernels")
                print(message, file=sys.stderr)
                os.makedirs(os.path.dirname(marker), exist_ok=True)
                with open(marker, "w") as f:
                    f.write(message + "\n")
                return
            if os.path.exists(marker):
                os.remove(marker)

        def get_export_symbols(self, ext) -> List[str]:
            return ["RegisterCustomOps"]   # not a Python module: no PyInit_ to export

    return build_native


def __getattr__(name: str):
    if name == "build_native":   # made on first use: setuptools is imported only then
        return _build_ext_class()
    raise AttributeError(name)

