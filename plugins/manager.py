"""The plugin manager: finds plugins (built-in, the `tf2ir` entry-point group, plugin
directories), collects their op mappings, op prototypes and fusion passes, and resolves
which plugin maps each TF op type and which prototype each IR op type has."""

from __future__ import annotations

import copy
import hashlib
import importlib
import importlib.util
import os
import pkgutil
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Optional, Protocol, Type, TypeVar

import pluggy

from tf2ir.ir.errors import PLUGIN_EXITS, ConversionError, plugin_exit
from tf2ir.ir.prototype import REGISTRY, OpPrototype
from tf2ir.plugins import builtin, spec
from tf2ir.ir.passes.manager import order_passes
from tf2ir.plugins.fusion import INNER_NODE_PREFIX, ScopeFusionPass, inner_node_registration
from tf2ir.plugins.registry import OpRegistration

BUILTIN_MODULES = tuple(f"tf2ir.plugins.builtin.{m.name}"
                        for m in pkgutil.iter_modules(builtin.__path__) if not m.ispkg)
PLUGIN_PATH_ENV = "TF2IR_PLUGIN_PATH"


class _HasProvenance(Protocol):
    """What the manager records on every registered item: the plugin and its source."""
    plugin: str
    source: str


_Provenanced = TypeVar("_Provenanced", bound=_HasProvenance)


@dataclass
class Override:
    """Two or more plugins claim one origin op type (or declare one IR op type)."""

    origin_type: str
    winner: Any
    losers: List[Any] = field(default_factory=list)
    what: str = ""          # "" for an op mapping, "prototype" for an IR op prototype

    def __str__(self) -> str:
        lost = ", ".join(f"{r.plugin} (priority {r.priority})" for r in self.losers)
        kind = f"{self.what} " if self.what else ""
        return (f"{kind}{self.origin_type}: {self.winner.plugin} (priority "
                f"{self.winner.priority}) overrides {lost}")


class PluginManager:
    """Loads plugins and answers `lookup(tf_op_type)` with the winning registration."""

    def __init__(self, plugin_dirs: Iterable[str] = (), entry_points: bool = True,
                 use_env: bool = True):
        self.pm = pluggy.PluginManager(spec.PROJECT)
        self.packages: Dict[str, str] = {}   # plugin name → the distribution that installed it
        self.pm.add_hookspecs(spec)
        if entry_points:
            self._load_entry_points()
        for module in BUILTIN_MODULES:   # named as their entry points were: builtin_nn, ...
            if not any(getattr(p, "__name__", None) == module for p in self.pm.get_plugins()):
                self.pm.register(importlib.import_module(module),
                                 name="builtin_" + module.rsplit(".", 1)[1])
        dirs = list(plugin_dirs)
        if use_env and os.environ.get(PLUGIN_PATH_ENV):
            dirs += [d for d in os.environ[PLUGIN_PATH_ENV].split(os.pathsep) if d]
        for path in dirs:
            self.load_path(path)
        self.registry: Dict[str, OpRegistration] = {}
        self.overrides: List[Override] = []
        self.registrations: List[OpRegistration] = []
        self.prototypes: Dict[str, OpPrototype] = {}
        self.prototype_overrides: List[Override] = []
        self._collect()
        self._collect_prototypes()
        passes = list(self._hook_results("tf2ir_fusion_passes", ScopeFusionPass,
                                         "scope_fusion_pass(...)"))
        # The run order (ties by name: plugins load in no particular order).
        records = order_passes([p.record() for p in sorted(passes, key=lambda p: p.name)])
        by_name = {p.name: p for p in passes}
        self.fusion_passes: List[ScopeFusionPass] = [by_name[r.name] for r in records]

    # -- loading -------------------------------------------------------------------
    def _load_entry_points(self) -> None:
        from importlib.metadata import entry_points
        for ep in entry_points(group=spec.PROJECT):
            if self.pm.get_plugin(ep.name) is not None:
                continue
            try:
                plugin = ep.load()
            except Exception as exc:  # a broken third-party package must be named
                raise ConversionError(f"cannot load plugin entry point '{ep.value}': "
                                      f"{type(exc).__name__}: {exc}", plugin=ep.name) from exc
            except PLUGIN_EXITS as exc:
                raise plugin_exit(exc, f"entry point '{ep.value}'",
                                  plugin=ep.name) from exc
            self.pm.register(plugin, name=ep.name)
            dist = getattr(ep, "dist", None)
            if dist is not None:
                self.packages[ep.name] = f"{dist.name} {dist.version}"

    def load_path(self, path: str) -> None:
        """Register a plugin file, or every `*.py` file of a plugin directory."""
        if os.path.isdir(path):
            files = sorted(os.path.join(path, f) for f in os.listdir(path)
                           if f.endswith(".py") and not f.startswith("_"))
        elif os.path.isfile(path):
            files = [path]
        else:
            raise ConversionError(f"plugin path does not exist: {path}")
        for file in files:
            file = os.path.abspath(file)
            if self.pm.get_plugin(file) is not None:
                continue
            # Unique per file: two plugin files of one basename must not replace each other.
            digest = hashlib.sha1(file.encode()).hexdigest()[:10]
            module_name = f"tf2ir_plugin_{os.path.splitext(os.path.basename(file))[0]}_{digest}"
            try:
                module_spec = importlib.util.spec_from_file_location(module_name, file)
                if module_spec is None or module_spec.loader is None:
                    raise ImportError(f"not a Python module: {file}")
                module = importlib.util.module_from_spec(module_spec)
                module_spec.loader.exec_module(module)
            except Exception as exc:
                raise ConversionError(f"cannot load plugin file: {type(exc).__name__}: {exc}",
                                      plugin=file) from exc
            except PLUGIN_EXITS as exc:   # at import time
                raise plugin_exit(exc, "the plugin file", plugin=file) from exc
            self.pm.register(module, name=file)

    # -- registry --------------------------------------------------------------------
    def _hook_results(self, hook_name: str, expected: Type[_Provenanced],
                      hint: str) -> Iterator[_Provenanced]:
        """Every item the plugins' `hook_name` returns, with its provenance set
        (`plugin`, `source`); a failing hook or a wrong item names the plugin."""
        for impl in getattr(self.pm.hook, hook_name).get_hookimpls():
            source = getattr(impl.plugin, "__file__", None) or repr(impl.plugin)
            if impl.plugin_name in self.packages:
                source = f"{self.packages[impl.plugin_name]} ({source})"
            try:
                items = list(impl.function() or [])
            except Exception as exc:
                raise ConversionError(f"{hook_name} failed: {type(exc).__name__}: {exc}",
                                      plugin=impl.plugin_name) from exc
            except PLUGIN_EXITS as exc:
                raise plugin_exit(exc, hook_name, plugin=impl.plugin_name) from exc
            for item in items:
                if not isinstance(item, expected):
                    raise ConversionError(f"{hook_name} returned {type(item).__name__}, "
                                          f"expected {hint} results", plugin=impl.plugin_name)
                # A copy: plugins return module-level objects that managers share.
                item = copy.copy(item)
                item.plugin, item.source = impl.plugin_name, source
                yield item

    def _collect(self) -> None:
        claims: Dict[str, List[OpRegistration]] = {}
        for reg in self._hook_results("tf2ir_op_mappings", OpRegistration, "register_op(...)"):
            reg.origin_types = list(reg.origin_types)   # not shared with the plugin's object
            self.registrations.append(reg)
            for origin in reg.origin_types:
                claims.setdefault(origin, []).append(reg)
        for origin, regs in claims.items():
            self.registry[origin] = _winner(origin, regs, self.overrides, "",
                                            "register_op(...).with_priority(N)")

    def _collect_prototypes(self) -> None:
        """Every plugin's declared prototypes; the winner per op type goes into the
        registry that inference, verification and lowering read."""
        claims: Dict[str, List[OpPrototype]] = {}
        for proto in self._hook_results("tf2ir_op_prototypes", OpPrototype, "op_prototype(...)"):
            claims.setdefault(proto.op_type, []).append(proto)
        for op_type, protos in claims.items():
            self.prototypes[op_type] = _winner(op_type, protos, self.prototype_overrides,
                                               "prototype", "op_prototype(...).with_priority(N)")
        REGISTRY.install(list(self.prototypes.values()))

    def overrides_for(self, origin_types) -> List[Override]:
        """The overrides that decide how these origin op types are mapped."""
        wanted = set(origin_types)
        return [o for o in self.overrides if o.origin_type in wanted]

    def lookup(self, origin_type: str) -> Optional[OpRegistration]:
        if origin_type.startswith(INNER_NODE_PREFIX) and origin_type not in self.registry:
            return inner_node_registration(origin_type)   # a many-to-many fusion result's node
        return self.registry.get(origin_type)

    def plugin_names(self) -> List[str]:
        return [name for name, _ in self.pm.list_name_plugin()]


def _winner(key: str, claims: List[Any], overrides: List[Override], what: str, fix: str) -> Any:
    """The highest-priority claim on `key`; a tie at the top is an error, an override is
    recorded."""
    claims = sorted(claims, key=lambda c: -c.priority)
    if len(claims) > 1:
        if claims[0].priority == claims[1].priority:
            noun = "IR op type" if what else "origin op type"
            verb = "declared" if what else "claimed"
            raise ConversionError(
                f"{noun} {key} is {verb} by {claims[0].plugin} and {claims[1].plugin} with "
                f"equal priority {claims[0].priority}; give one a higher priority ({fix})",
                op_type=key, plugin=claims[0].plugin)
        overrides.append(Override(key, claims[0], claims[1:], what))
    return claims[0]
