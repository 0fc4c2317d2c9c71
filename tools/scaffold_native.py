"""`tf2ir new-plugin --native`: the files a plugin package adds for a C++ kernel.

The kernel (PKG/kernels.cc, onnxruntime's lite custom-op API through `<tf2ir/native.h>`) is
built at `pip install` by the package's setup.py with `tf2ir.plugins.native_build`; the plugin
declares it (`tf2ir_native_libraries`), so tf2ir's runtime entry runs the op natively where it
was built and by the Python kernel (still the fold function) where it was not.
"""

from __future__ import annotations

from typing import Dict

SETUP_PY = '''\
"""Builds {package}'s native kernel ({package}/kernels.cc → {package}._kernels) at `pip install`
against tf2ir's headers (tf2ir.plugins.native_build); the metadata is in setup.cfg. Where no
C++ compiler works the package installs all the same, says once that its native kernels are
not built, and {ir_op} runs by its Python kernel."""

import importlib.util
import os
import subprocess
import sys

from setuptools import setup


def tf2ir_native_build():
    """tf2ir.plugins.native_build: imported where tf2ir is importable (--no-build-isolation);
    in pip's isolated build environment (the default), where it is not, loaded by path from
    the tf2ir of the interpreter running pip (the module needs only setuptools)."""
    try:
        import tf2ir.plugins.native_build as native_build
        return native_build
    except ImportError:
        pass
    env = dict(os.environ)
    env.pop("PYTHONNOUSERSITE", None)   # the isolation's settings, left out of the question
    path = [p for p in env.pop("PYTHONPATH", "").split(os.pathsep) if p and "pip-build-env" not in p]
    if path:
        env["PYTHONPATH"] = os.pathsep.join(path)
    ask = "import tf2ir.plugins.native_build as m; print(m.__file__)"
    found = subprocess.run([sys.executable, "-c", ask], env=env, capture_output=True, text=True)
    if found.returncode != 0 or not found.stdout.strip():
        sys.exit(f"{package}: building needs tf2ir installed for {{sys.executable}} "
                 f"(pip install tf2ir): {{found.stderr.strip()[-300:]}}")
    spec = importlib.util.spec_from_file_location("tf2ir_native_build",
                                                  found.stdout.strip().splitlines()[-1])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


native_build = tf2ir_native_build()
setup(ext_modules=[native_build.native_extension("{package}._kernels", ["{package}/kernels.cc"])],
      cmdclass={{"build_ext": native_build.build_native}})
'''

KERNELS_CC = '''\
// {package}'s native kernel: TensorFlow {origin} as onnxruntime custom op {domain}:{ir_op},
// built at `pip install` (setup.py) against tf2ir's headers (tf2ir.get_include()). Where it is
// built, tf2ir's runtime entry runs the {ir_op} nodes{served} here; {package}/plugin.py's
// Python kernel stays the fold function and the fallback (no compiler at install).
//
// C++17. Bad input returns an Ort::Status error (never throw, never abort); the results are
// TensorFlow's, as the Python kernel's are. Numbers out: T* out = y.Allocate(shape); strings
// out: y.SetStringOutput(std::vector<std::string>, shape).
#include <tf2ir/native.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {{

struct {struct} {{
  // The node's attributes, read once where onnxruntime makes the kernel.
  {struct}(const OrtApi*, const OrtKernelInfo* info){members_init} {{ (void)info; }}

  Ort::Status Compute({compute_args}) {{
    return Ort::Status("write {origin}'s compute in {package}/kernels.cc", ORT_NOT_IMPLEMENTED);
  }}
{members}}};

}}  // namespace

TF2IR_NATIVE_OPS(ops) {{
  ops.add("{domain}", Ort::Custom::CreateLiteCustomOp<{struct}>("{ir_op}", "CPUExecutionProvider"));
}}
'''

NATIVE_HOOK = '''

@hookimpl
def tf2ir_native_libraries():
    """The C++ kernel ({package}/kernels.cc, built at install as {package}._kernels)."""
    return [native_library(os.path.dirname(os.path.abspath(__file__)), "_kernels", DOMAIN,
                           [{ir_op!r}]{types})]
'''

NATIVE_CHECK = '''\
    library = next((lib for lib in plugins.native_libraries if lib.domain == DOMAIN), None)
    if library is not None and library.path is not None:   # built at install: it must run
        assert (session.native_ops, session.python_ops) == (1, 0), "the native kernel did not run"
    else:
        assert (session.native_ops, session.python_ops) == (0, 1)
        warnings.warn(f"checked the Python kernel of {ir_op}: its native library is not built "
                      f"({{library.why_not_built if library else 'not declared'}})")
'''

README = '''\
# {name}

tf2ir plugin: TensorFlow `{origin}` → IR `{ir_op}`, with a native (C++) kernel.

Write the compute in `{package}/kernels.cc` (and the Python kernel in `{package}/plugin.py`,
the fold function and the fallback), then:

```sh
pip install -e .
tf2ir plugins | grep -e {origin} -e {domain}
python -m pytest tests
```
'''

CPP_TYPES = {"float16": "Ort::Float16_t", "float32": "float", "float64": "double", "int8": "int8_t",
             "int16": "int16_t", "int32": "int32_t", "int64": "int64_t", "uint8": "uint8_t",
             "uint16": "uint16_t", "bool": "bool"}
ATTR_CPP = {"int": ("int64_t", "0"), "bool": ("int64_t", "0"), "float": ("float", "0.0f"),
            "str": ("std::string", '""')}   # the ONNX node carries these (the lowering's attrs)


def native_files(values: Dict[str, str], signature) -> Dict[str, str]:
    """setup.py, PKG/kernels.cc and README.md of a native package; fills `values`' entries for
    the plugin module (imports, hook) and the test (the check that the native kernel ran)."""
    package, ir_op = values["package"], values["ir_op"]
    first = signature.inputs[0] if signature.inputs else None
    typed = first is not None and not first.fixed   # a type attribute picks its dtype
    values.update(
        imports="\nimport os\n", plugin_names="native_library, register_op",
        native_doc=f"\n\nThe C++ kernel in {package}/kernels.cc (built at install) runs {ir_op} "
                   "natively;\nthis kernel stays the fold function and the fallback.",
        native_hook=NATIVE_HOOK.format(
            package=package, ir_op=ir_op,
            types=f",\n                           types={{{ir_op!r}: [{first.dtype!r}]}}" if typed else ""),
        native_check=NATIVE_CHECK.format(ir_op=ir_op))

    def tensor(port, out: bool) -> str:
        element = CPP_TYPES.get(port.dtype) or ("std::string" if out else "std::string_view")
        return (f"Ort::Custom::Tensor<{element}>& {port.name}" if out
                else f"const Ort::Custom::Tensor<{element}>& {port.name}")

    args = [tensor(p, False) for p in signature.inputs] + [tensor(p, True) for p in signature.outputs]
    members, inits = [], []
    for attr, kind, default in signature.attrs:
        if kind not in ATTR_CPP:
            continue
        cpp, zero = ATTR_CPP[kind]
        fallback = zero if default is None else (
            '"%s"' % str(default).replace("\\", "\\\\").replace('"', '\\"') if kind == "str"
            else f"{float(default)!r}f" if kind == "float" else str(int(default)))
        inits.append(f'{attr}_(tf2ir::attribute<{cpp}>(info, "{attr}", {cpp}({fallback})))')
        members.append(f"  {cpp} {attr}_;   // TF's attribute {attr}\n")
    kernel = dict(values, struct=f"{values['origin']}Kernel",
                  compute_args=(",\n" + " " * 22).join(args),
                  members_init=("\n      : " + ",\n        ".join(inits)) if inits else "",
                  members=("\n" + "".join(members)) if members else "",
                  served=f" whose {first.name} is {first.dtype}" if typed else "")
    return {"setup.py": SETUP_PY.format(**values),
            f"{package}/kernels.cc": KERNELS_CC.format(**kernel),
            "README.md": README.format(**values)}
