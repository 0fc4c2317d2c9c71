"""setup.cfg holds the metadata; this file adds tf2ir's own native kernel library
(opp/native/*.cc → tf2ir.opp._kernels), built with the helper plugin packages use
(plugins/native_build.py, loaded by path: tf2ir is not importable while it is built).
Where no C++ compiler works, the install goes on without it and says so once; the string
ops then run by their Python kernels."""

import glob
import importlib.util
import os

from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "tf2ir_native_build", os.path.join(HERE, "plugins", "native_build.py"))
native_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(native_build)

sources = sorted(os.path.relpath(p, HERE) for p in glob.glob(os.path.join(HERE, "opp", "native", "*.cc")))
setup(ext_modules=[native_build.native_extension("tf2ir.opp._kernels", sources,
                                                 depends=glob.glob("opp/native/*.h"),
                                                 extra_compile_args=["-O3"])],
      cmdclass={"build_ext": native_build.build_native})
