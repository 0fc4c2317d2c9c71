"""The plugin manager: finds plugins (built-in, the `tf2ir` entry-point group, plugin
directories), collects their op mappings and resolves which plugin maps each TF op type."""

from __future__ import annotations

import copy
import importlib
import importlib.util
import os
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional

import pluggy

from tf2ir.ir import ConversionError
from tf2ir.plugins import spec
from tf2ir.plugins.fusion import (
    INNER_NODE_PREFIX, ScopeFusionPass, inner_node_registration, order_passes,
)
from tf2ir.plugins.registry import OpRegistration

BUILTIN_MODULES = tuple(f"tf2ir.plugins.builtin.{family}" for family in (
    "nn", "math", "array", "fusion", "control", "elementwise", "shape", "image", "reduce"))
PLUGIN_PATH_ENV = "TF2IR_PLUGIN_PATH"


@dataclass
class Override:
    origin_type: str
    winner: OpRegistration
    losers: List[OpRegistration] = field(default_factory=list)

    def __str__(self) -> str:
        lost = ", ".join(f"{r.plugin} (priority {r.priority})" for r in self.losers)
        return (f"{self.origin_type}: {self.winner.plugin} (priority {self.winner.priority}) "
                f"overrides {lost}")


class PluginManager:
    """Loads plugins and answers `lookup(tf_op_type)` with the winning registration."""

    def __init__(self, plugin_dirs: Iterable[str] = (), entry_points: bool = True,
                 use_env: bool = True):
        self.pm = pluggy.PluginManager(spec.PROJECT)
        self.packages: Dict[str, str] = {}   # plugin name → the distribution that installed it
        self.pm.add_hookspecs(spec)
        if entry_points:
            self._load_entry_points()
        for module in BUILTIN_MODULES:
            if not any(getattr(p, "__name__", None) == module for p in self.pm.get_plugins()):
                self.pm.register(importlib.import_module(module), name=module)
        dirs = list(plugin_dirs)
        if use_env and os.environ.get(PLUGIN_PATH_ENV):
            dirs += [d for d in os.environ[PLUGIN_PATH_ENV].split(os.pathsep) if d]
        for path in dirs:
            self.load_path(path)
        self.registry: Dict[str, OpRegistration] = {}
        self.overrides: List[Override] = []
        self.registrations: List[OpRegistration] = []
        self._collect()
        self.fusion_passes: List[ScopeFusionPass] = order_passes([  # in run order
            *self._hook_results("tf2ir_fusion_passes", ScopeFusionPass, "scope_fusion_pass(...)")])

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
            self.pm.register(plugin, name=ep.name)
            if getattr(ep, "dist", None) is not None:
                self.packages[ep.name] = f"{ep.dist.name} {ep.dist.version}"

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
            module_name = "tf2ir_plugin_" + os.path.splitext(os.path.basename(file))[0]
            try:
                module_spec = importlib.util.spec_from_file_location(module_name, file)
                module = importlib.util.module_from_spec(module_spec)
                module_spec.loader.exec_module(module)
            except Exception as exc:
                raise ConversionError(f"cannot load plugin file: {type(exc).__name__}: {exc}",
                                      plugin=file) from exc
            self.pm.register(module, name=file)

    # -- registry --------------------------------------------------------------------
    def _hook_results(self, hook_name: str, expected: type, hint: str):
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
            regs = sorted(regs, key=lambda r: -r.priority)
            if len(regs) > 1:
                if regs[0].priority == regs[1].priority:
                    raise ConversionError(
                        f"origin op type {origin} is claimed by {regs[0].plugin} and "
                        f"{regs[1].plugin} with equal priority {regs[0].priority}; "
                        "give one a higher priority (register_op(...).with_priority(N))",
                        op_type=origin, plugin=regs[0].plugin)
                self.overrides.append(Override(origin, regs[0], regs[1:]))
            self.registry[origin] = regs[0]

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
