"""The generated index of the built-in plugins (`plugins/builtin/_index.py`, made by
`python -m tf2ir.tools.plugin_index`), and the stand-ins the plugin manager registers for
built-in modules it has not imported yet."""

from __future__ import annotations

import functools
import importlib
import logging
import os
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from tf2ir.plugins import builtin, spec

log = logging.getLogger("tf2ir")


class BuiltinStandIn(ModuleType):
    """A built-in plugin module registered with pluggy before it is imported: each of its
    hooks imports the module on the first call and answers with the module's hook. (A
    module object: pluggy looks for hooks among its few attributes only.)"""

    def __init__(self, module: str, hooks: Sequence[str]):
        super().__init__(module)
        self.__file__ = os.path.join(builtin.__path__[0], module.rsplit(".", 1)[1] + ".py")
        self.__dict__["_module"] = None
        for hook in hooks:
            setattr(self, hook, _standin_hook(self, hook))

    @property
    def module(self) -> Optional[ModuleType]:
        return self.__dict__["_module"]

    def load(self) -> ModuleType:
        if self.module is None:
            module = importlib.import_module(self.__name__)
            self.__dict__["_module"] = module
            self.__file__ = module.__file__ or self.__file__
        return self.__dict__["_module"]

    def __repr__(self) -> str:
        return f"<built-in plugin {self.__name__}{'' if self.module else ' (not imported)'}>"


def _standin_hook(standin: BuiltinStandIn, name: str) -> Callable[[], Any]:
    def call():
        return getattr(standin.load(), name)()
    call.__name__ = call.__qualname__ = name
    return spec.hookimpl(call)


def _source_files() -> List[Tuple[str, str]]:
    """(name, path) of the files the built-in index is made from: the built-in plugin
    modules and the op families they declare (opp/)."""
    from tf2ir import opp
    files = []
    for package, folder in (("builtin", builtin.__path__[0]), ("opp", opp.__path__[0])):
        files += [(f"{package}/{entry.name}", entry.path) for entry in os.scandir(folder)
                  if entry.name.endswith(".py") and entry.name != "_index.py"]
    return sorted(files)


def builtin_sources() -> Dict[str, int]:
    """Each file the built-in index is made from → its size: what a conversion compares
    (cheap), while the test of the index compares `builtin_fingerprint` (every byte)."""
    return {name: os.stat(path).st_size for name, path in _source_files()}


def builtin_fingerprint() -> str:
    """A digest of the contents of the files the built-in index is made from."""
    import hashlib
    digest = hashlib.sha1()
    for name, path in _source_files():
        with open(path, "rb") as f:
            digest.update(name.encode() + b"\0" + f.read())
    return digest.hexdigest()


@dataclass
class BuiltinIndex:
    """What the generated index says of the built-in modules (by their short names)."""

    hooks: Dict[str, Tuple[str, ...]]              # module → the hooks it implements
    origin_types: Dict[str, Tuple[str, ...]]       # origin op type → the modules claiming it
    ir_types: Dict[str, Tuple[str, ...]]           # IR op type → the modules declaring it
    fusion_passes: Tuple[Dict[str, Any], ...]      # name, module, needs per pattern, ...


@functools.lru_cache(maxsize=None)
def builtin_index() -> Optional[BuiltinIndex]:
    """The generated index of the built-in plugins, or None when it is missing or its files
    have changed since (then every built-in module is imported, as without one)."""
    try:
        from tf2ir.plugins.builtin import _index
    except ImportError:
        return None
    try:
        fresh = _index.SOURCES == builtin_sources()
    except (OSError, AttributeError):   # no sources (bytecode only), an older index
        fresh = False
    if not fresh:
        log.debug("the built-in plugin index is stale: importing every built-in plugin "
                  "(python -m tf2ir.tools.plugin_index makes it again)")
        return None

    def owners(by_module: Dict[str, Tuple[str, ...]]) -> Dict[str, Tuple[str, ...]]:
        found: Dict[str, Tuple[str, ...]] = {}
        for module, keys in by_module.items():
            for key in keys:
                found[key] = found.get(key, ()) + (module,)
        return found
    return BuiltinIndex(owners(_index.HOOKS), owners(_index.ORIGIN_TYPES),
                        owners(_index.IR_TYPES), _index.FUSION_PASSES)
