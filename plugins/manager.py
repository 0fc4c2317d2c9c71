"""The plugin manager: finds plugins (built-in, the `tf2ir` entry-point group, plugin
directories), collects their op mappings, op prototypes and fusion passes, and resolves
which plugin maps each TF op type and which prototype each IR op type has.

Built-in plugin modules are imported when a conversion needs them. The generated index
(`plugins/builtin/_index.py`, `python -m tf2ir.tools.plugin_index`) says which modules claim
each origin op type and declare each IR op type, and what each fusion pass needs in a graph.
Each built-in module is still registered with pluggy in its place, by a stand-in that
imports it on its first hook call, and a key is decided only once every plugin claiming it
is loaded: priorities, overrides, conflicts and provenance are those of a manager that
imports everything, which `registry`, `prototypes`, `fusion_passes` and the override lists
do when read (`tf2ir plugins`). Without a fresh index every module is imported at once."""

from __future__ import annotations

import copy
import functools
import importlib
import importlib.util
import os
import pkgutil
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Protocol, Set, Tuple, Type, TypeVar, Union

import pluggy

from tf2ir.ir.errors import ConversionError, plugin_code
from tf2ir.ir.prototype import (
    OpPrototype, PrototypeRegistry, check_op_type, check_priority, set_default_factory,
)
from tf2ir.plugins import builtin, spec
from tf2ir.ir.passes.manager import order_passes
from tf2ir.plugins.fusion import (
    INNER_NODE_PREFIX, DeferredFusionPass, Needs, ScopeFusionPass, inner_node_registration,
)
from tf2ir.plugins.builtin_index import BuiltinIndex, BuiltinStandIn, builtin_index
from tf2ir.plugins.registry import TENSORFLOW, OpRegistration, mapping_key
from tf2ir.ir.onnx.native import NativeLibrary
from tf2ir.plugins.libraries import ordered_libraries

# The built-in plugin modules; `_index` (generated) and other private modules are not plugins.
BUILTIN_MODULES = tuple(f"tf2ir.plugins.builtin.{m.name}"
                        for m in pkgutil.iter_modules(builtin.__path__)
                        if not m.ispkg and not m.name.startswith("_"))
PLUGIN_PATH_ENV = "TF2IR_PLUGIN_PATH"
HOOKS = ("tf2ir_op_mappings", "tf2ir_op_prototypes", "tf2ir_fusion_passes",
         "tf2ir_native_libraries")


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
        index = builtin_index()
        self._standins: Dict[str, BuiltinStandIn] = {}   # built-in module name → stand-in
        for module in BUILTIN_MODULES:   # named as their entry points were: builtin_nn, ...
            if not any(getattr(p, "__name__", None) == module for p in self.pm.get_plugins()):
                short = module.rsplit(".", 1)[1]
                if index is None:
                    self.pm.register(importlib.import_module(module), name="builtin_" + short)
                else:
                    standin = BuiltinStandIn(module, index.hooks.get(short, ()))
                    self._standins[module] = standin
                    self.pm.register(standin, name="builtin_" + short)
        dirs = list(plugin_dirs)
        if use_env and os.environ.get(PLUGIN_PATH_ENV):
            dirs += [d for d in os.environ[PLUGIN_PATH_ENV].split(os.pathsep) if d]
        for path in dirs:
            self.load_path(path)
        self._index: Optional[BuiltinIndex] = index
        self._items: Dict[Tuple[str, str], list] = {}   # (plugin, hook) → its items, with provenance
        self._complete = False                          # every plugin's items collected
        self._registry: Dict[str, OpRegistration] = {}
        self._overrides: Dict[str, Override] = {}
        self._prototypes: Dict[str, OpPrototype] = {}
        self._prototype_overrides: Dict[str, Override] = {}
        self._decided: Dict[str, Set[str]] = {"mapping": set(), "prototype": set()}
        if index is None:
            self._load_all()
        else:
            # The keys loaded plugins claim are decided now: a conflict with a built-in
            # raises here, as it does when every built-in is imported.
            for reg in self._hook_items("tf2ir_op_mappings"):
                for key in reg.keys:
                    self._decide_mapping(key)
            for proto in self._hook_items("tf2ir_op_prototypes"):
                self._decide_prototype(proto.op_type)
        self._fusion_plan = self._plan_fusion_passes()
        self._native: Optional[List[NativeLibrary]] = None
        # This manager's own prototype table: the graphs its pipelines make read it (no other
        # manager's ops are ever seen there); it asks this manager for op types it lacks.
        self.prototype_table = PrototypeRegistry()
        self.prototype_table.install(list(self._prototypes.values()), source=self)

    # -- loading -------------------------------------------------------------------
    def _load_entry_points(self) -> None:
        from importlib.metadata import entry_points
        for ep in entry_points(group=spec.PROJECT):
            if self.pm.get_plugin(ep.name) is not None:
                continue
            dist = getattr(ep, "dist", None)
            if dist is not None:
                self.packages[ep.name] = f"{dist.name} {dist.version}"
            # A broken third-party package (its import, or a registration it builds there)
            # must be named.
            with plugin_code(f"loading entry point '{ep.value}'", self._named(ep.name)):
                plugin = ep.load()
            self.pm.register(plugin, name=ep.name)

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
            import hashlib
            digest = hashlib.sha1(file.encode()).hexdigest()[:10]
            module_name = f"tf2ir_plugin_{os.path.splitext(os.path.basename(file))[0]}_{digest}"
            with plugin_code("loading the plugin file", file):   # its import, its registrations
                module_spec = importlib.util.spec_from_file_location(module_name, file)
                if module_spec is None or module_spec.loader is None:
                    raise ImportError(f"not a Python module: {file}")
                module = importlib.util.module_from_spec(module_spec)
                module_spec.loader.exec_module(module)
            self.pm.register(module, name=file)

    def _named(self, plugin: str) -> str:
        """A plugin's name for an error: an installed package's plugin with the package."""
        package = self.packages.get(plugin)
        return f"{plugin} ({package})" if package else plugin

    def _load_all(self) -> None:
        """Import every built-in module and decide every key, in the order of a manager
        that imported everything at once."""
        for standin in self._standins.values():
            standin.load()
        self._complete = True
        self._registry, self._overrides = self._decide_all("tf2ir_op_mappings", "")
        self._prototypes, self._prototype_overrides = self._decide_all("tf2ir_op_prototypes",
                                                                       "prototype")
        self._decided = {"mapping": set(self._registry), "prototype": set(self._prototypes)}

    # -- registry --------------------------------------------------------------------
    def _results(self, impl, hook_name: str, expected: Type[_Provenanced],
                 hint: str) -> List[_Provenanced]:
        """The items one plugin's `hook_name` returns (collected once), with provenance
        (`plugin`, `source`); a failing hook or a wrong item names the plugin."""
        key = (impl.plugin_name, hook_name)
        if key in self._items:
            return self._items[key]
        with plugin_code(hook_name, self._named(impl.plugin_name)):   # it names the plugin
            items = list(impl.function() or [])
        source = getattr(impl.plugin, "__file__", None) or repr(impl.plugin)
        if impl.plugin_name in self.packages:
            source = f"{self.packages[impl.plugin_name]} ({source})"
        builtin = getattr(impl.plugin, "__name__", None) in BUILTIN_MODULES
        results = []
        for item in items:
            if not isinstance(item, expected):
                raise ConversionError(f"{hook_name} returned {type(item).__name__}, "
                                      f"expected {hint} results",
                                      plugin=self._named(impl.plugin_name))
            # A copy: plugins return module-level objects that managers share.
            item = copy.copy(item)
            item.plugin, item.source = impl.plugin_name, source
            if isinstance(item, OpRegistration):
                item.origin_types = list(item.origin_types)   # not shared with the plugin's
                try:
                    item.validate()
                except (TypeError, ValueError) as exc:
                    raise ConversionError(f"{hook_name} returned a bad registration: {exc}",
                                          plugin=self._named(impl.plugin_name)) from exc
            elif isinstance(item, OpPrototype):
                item.builtin = builtin
                try:
                    check_op_type(item.op_type, "op_prototype(...)")
                    item.priority = check_priority(item.priority, "op_prototype(...).with_priority")
                except (TypeError, ValueError) as exc:
                    raise ConversionError(f"{hook_name} returned a bad prototype: {exc}",
                                          plugin=self._named(impl.plugin_name)) from exc
            results.append(item)
        self._items[key] = results
        return results

    def _hook_items(self, hook_name: str) -> List[Any]:
        """The items of every loaded plugin's `hook_name`, in pluggy's order (a built-in
        module not imported yet is skipped)."""
        expected, hint = _EXPECTED[hook_name]
        items: List[Any] = []
        for impl in getattr(self.pm.hook, hook_name).get_hookimpls():
            if isinstance(impl.plugin, BuiltinStandIn) and impl.plugin.module is None:
                continue
            items += self._results(impl, hook_name, expected, hint)
        return items

    def _claims(self, hook_name: str) -> Dict[str, List[Any]]:
        """Key (origin op type, or IR op type) → the loaded plugins' items claiming it, in
        the order the keys were first claimed."""
        claims: Dict[str, List[Any]] = {}
        for item in self._hook_items(hook_name):
            for key in (item.keys if isinstance(item, OpRegistration) else [item.op_type]):
                claims.setdefault(key, []).append(item)
        return claims

    def _decide_all(self, hook_name: str, what: str) -> Tuple[Dict[str, Any], Dict[str, Override]]:
        fix = ("op_prototype(...).with_priority(N)" if what else
               "register_op(...).with_priority(N)")
        winners: Dict[str, Any] = {}
        overrides: List[Override] = []
        for key, claims in self._claims(hook_name).items():
            winners[key] = _winner(key, claims, overrides, what, fix)
        return winners, {o.origin_type: o for o in overrides}

    def _decide(self, key: str, kind: str) -> None:
        """Import the built-in modules that claim `key` (the index says which), then pick
        its winner among every loaded plugin's claims."""
        if key in self._decided[kind] or self._index is None or self._complete:
            return   # after _load_all every claimed key is decided
        table = self._index.origin_types if kind == "mapping" else self._index.ir_types
        for short in table.get(key, ()):
            standin = self._standins.get(f"{builtin.__name__}.{short}")
            if standin is not None:
                standin.load()
        hook = "tf2ir_op_mappings" if kind == "mapping" else "tf2ir_op_prototypes"
        claims = self._claims(hook).get(key, [])
        self._decided[kind].add(key)
        if not claims:
            return
        overrides: List[Override] = []
        if kind == "mapping":
            self._registry[key] = _winner(key, claims, overrides, "",
                                          "register_op(...).with_priority(N)")
            self._overrides.update((o.origin_type, o) for o in overrides)
        else:
            self._prototypes[key] = _winner(key, claims, overrides, "prototype",
                                            "op_prototype(...).with_priority(N)")
            self._prototype_overrides.update((o.origin_type, o) for o in overrides)

    def _decide_mapping(self, origin_type: str) -> None:
        self._decide(origin_type, "mapping")

    def _decide_prototype(self, op_type: str) -> None:
        self._decide(op_type, "prototype")

    def _complete_all(self) -> None:
        if not self._complete:
            self._load_all()

    def _ordered(self, overrides: Dict[str, Override], hook_name: str,
                 keys: Optional[Set[str]] = None) -> List[Override]:
        """The overrides (of `keys`, when given) in the order their keys were first claimed."""
        order = self._claims(hook_name)
        return [overrides[k] for k in order if k in overrides and (keys is None or k in keys)]

    # -- what the plugins provide ------------------------------------------------------
    @property
    def registry(self) -> Dict[str, OpRegistration]:
        """Origin op type → the winning op mapping (every plugin imported)."""
        self._complete_all()
        return self._registry

    @property
    def registrations(self) -> List[OpRegistration]:
        """Every op mapping of every plugin, winners and losers."""
        self._complete_all()
        return self._hook_items("tf2ir_op_mappings")

    @property
    def overrides(self) -> List[Override]:
        self._complete_all()
        return self._ordered(self._overrides, "tf2ir_op_mappings")

    @property
    def prototypes(self) -> Dict[str, OpPrototype]:
        """IR op type → the winning prototype (every plugin imported)."""
        self._complete_all()
        return self._prototypes

    @property
    def prototype_overrides(self) -> List[Override]:
        self._complete_all()
        return self._ordered(self._prototype_overrides, "tf2ir_op_prototypes")

    @property
    def fusion_passes(self) -> List[ScopeFusionPass]:
        """The fusion passes in run order (every plugin imported)."""
        self._complete_all()
        return [p.load() if isinstance(p, DeferredFusionPass) else p for p in self._fusion_plan]

    def fusion_plan(self) -> List[Union[ScopeFusionPass, DeferredFusionPass]]:
        """The fusion passes in run order; a built-in one not imported yet is a
        `DeferredFusionPass`, imported when a graph may need it."""
        return list(self._fusion_plan)

    def _plan_fusion_passes(self) -> List[Union[ScopeFusionPass, DeferredFusionPass]]:
        passes: List[Union[ScopeFusionPass, DeferredFusionPass]] = list(
            self._hook_items("tf2ir_fusion_passes"))
        if self._index is not None:
            for entry in self._index.fusion_passes:
                module = f"{builtin.__name__}.{entry['module']}"
                standin = self._standins.get(module)
                if standin is not None and standin.module is None:
                    passes.append(DeferredFusionPass(
                        entry["name"], functools.partial(self._load_pass, module, entry["name"]),
                        [Needs(**needs) for needs in entry["patterns"]], list(entry["after"]),
                        list(entry["before"]), entry["enabled"], entry["description"],
                        self.pm.get_name(standin) or "", standin.__file__ or ""))
        # The run order (ties by name: plugins load in no particular order).
        records = order_passes([p.record() for p in sorted(passes, key=lambda p: p.name)])
        by_name = {p.name: p for p in passes}
        return [by_name[r.name] for r in records]

    def _load_pass(self, module: str, name: str) -> ScopeFusionPass:
        self._standins[module].load()
        for found in self._hook_items("tf2ir_fusion_passes"):
            if found.name == name and found.plugin == self.pm.get_name(self._standins[module]):
                return found
        raise ConversionError(f"the built-in plugin index is stale: {module} has no fusion "
                              f"pass {name} (run python -m tf2ir.tools.plugin_index)")

    # -- answers -----------------------------------------------------------------------
    def overrides_for(self, origin_types, framework: str = TENSORFLOW) -> List[Override]:
        """The overrides that decide how these origin op types (of `framework`) are mapped."""
        wanted = {mapping_key(framework, origin) for origin in origin_types}
        for origin in wanted:
            self._decide_mapping(origin)
        return self._ordered(self._overrides, "tf2ir_op_mappings", wanted)

    def lookup(self, origin_type: str, framework: str = TENSORFLOW) -> Optional[OpRegistration]:
        """The mapping of `origin_type` in `framework`'s models, or None."""
        if framework != TENSORFLOW:
            origin_type = mapping_key(framework, origin_type)
        reg = self._registry.get(origin_type)
        if reg is None and origin_type not in self._decided["mapping"]:
            self._decide_mapping(origin_type)
            reg = self._registry.get(origin_type)
        if reg is None and origin_type.startswith(INNER_NODE_PREFIX):
            return inner_node_registration(origin_type)   # a many-to-many fusion result's node
        return reg

    def resolve_prototype(self, op_type: str) -> Optional[OpPrototype]:
        """The winning prototype of `op_type`, its plugins imported first (the prototype
        registry asks for an op type it does not have yet)."""
        self._decide_prototype(op_type)
        return self._prototypes.get(op_type)

    def all_prototypes(self) -> Dict[str, OpPrototype]:
        return self.prototypes

    @property
    def native_libraries(self) -> List[NativeLibrary]:
        """Every plugin's native kernel libraries (the built-in modules that declare some are
        imported), highest priority first: the runtime entry registers them. Two libraries
        serving one op of one domain with equal priority are an error, as op mappings are."""
        if self._native is None:
            for standin in self._standins.values():
                if hasattr(standin, "tf2ir_native_libraries"):
                    standin.load()
            libraries = ordered_libraries(self._hook_items("tf2ir_native_libraries"))
            self._native = libraries
        return self._native

    def plugin_names(self) -> List[str]:
        return [name for name, _ in self.pm.list_name_plugin()]


_DEFAULT_MANAGER: Optional[PluginManager] = None


def default_manager() -> PluginManager:
    """The default plugin manager (every installed plugin, and TF2IR_PLUGIN_PATH's as it is
    when first asked for), made once: graphs without a prototype table of their own (built by
    hand, loaded from text) read its table. No other manager ever replaces it."""
    global _DEFAULT_MANAGER
    if _DEFAULT_MANAGER is None:
        _DEFAULT_MANAGER = PluginManager()
    return _DEFAULT_MANAGER


set_default_factory(lambda: default_manager().prototype_table)


_EXPECTED: Dict[str, Tuple[type, str]] = {
    "tf2ir_op_mappings": (OpRegistration, "register_op(...)"),
    "tf2ir_op_prototypes": (OpPrototype, "op_prototype(...)"),
    "tf2ir_fusion_passes": (ScopeFusionPass, "scope_fusion_pass(...)"),
    "tf2ir_native_libraries": (NativeLibrary, "native_library(...)"),
}


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
