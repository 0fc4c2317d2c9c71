"""Op prototype tables: each plugin manager owns one (`PrototypeRegistry`) holding the winners
of its plugins' declarations; an IR graph belongs to one (`Graph.prototypes`, set where the
pipeline creates graphs and inherited by their subgraphs), and every reader asks the graph's
table (`prototypes_of`). A graph without one (built by hand, loaded from text) reads the
default table: that of a plugin manager made on first need, which no other manager replaces.
Nothing reads a process-wide table that another manager could overwrite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Protocol, Sequence, Set

if TYPE_CHECKING:
    from tf2ir.ir.prototype import OpPrototype


class PrototypeSource(Protocol):
    """Where a registry finds the prototypes it was not given: a plugin manager that imports
    its plugins when an op type is first asked for."""

    def resolve_prototype(self, op_type: str) -> Optional[OpPrototype]: ...

    def all_prototypes(self) -> Dict[str, OpPrototype]: ...


class PrototypeRegistry:
    """One op prototype table: the winners of one plugin manager's declarations (each
    manager owns one). A graph reads its own table (`prototypes_of`); everything in `ir/`
    (inference, verification, lowering) asks a graph's table, never a process-wide one."""

    def __init__(self) -> None:
        self._prototypes: Dict[str, OpPrototype] = {}
        self._source: Optional[PrototypeSource] = None
        self._missing: Set[str] = set()   # op types the source has no prototype for

    def install(self, prototypes: Sequence[OpPrototype],
                source: Optional[PrototypeSource] = None) -> None:
        """Make `prototypes` (one per op type) the ones in force; `source`, when given, is
        asked for any other op type (and answers once per op type)."""
        self._prototypes = {p.op_type: p for p in prototypes}
        self._source = source
        self._missing = set()

    @property
    def source(self) -> Optional[PrototypeSource]:
        """Who filled this table (a plugin manager), if anyone."""
        return self._source

    def find(self, op_type: str) -> Optional[OpPrototype]:
        """The prototype of `op_type`, or None when this table has none."""
        proto = self._prototypes.get(op_type)
        if proto is None and self._source is not None and op_type not in self._missing:
            proto = self._source.resolve_prototype(op_type)
            if proto is None:
                self._missing.add(op_type)
            else:
                self._prototypes[op_type] = proto
        return proto

    def get(self, op_type: str) -> OpPrototype:
        proto = self.find(op_type)
        if proto is None:
            hint = "" if self._prototypes or self._source is not None else (
                " (no prototypes are registered: create a tf2ir.plugins.PluginManager first)")
            raise KeyError(f"no op prototype for IR op type {op_type!r}{hint}")
        return proto

    def has(self, op_type: str) -> bool:
        return self.find(op_type) is not None

    def all(self) -> Dict[str, OpPrototype]:
        if self._source is not None:   # every prototype: the source imports all its plugins
            self._prototypes = dict(self._source.all_prototypes())
            self._source = None
        return dict(self._prototypes)


# The default table: that of a plugin manager made on first need (`set_default_factory`,
# which the plugin manager's module calls), for graphs built by hand or loaded without one.
# No other manager ever replaces it.
_DEFAULT: Optional[PrototypeRegistry] = None
_DEFAULT_FACTORY: Optional[Callable[[], PrototypeRegistry]] = None
_NO_PROTOTYPES = PrototypeRegistry()   # before any plugin manager module is imported


def set_default_factory(factory: Callable[[], PrototypeRegistry]) -> None:
    """How the default table is made when first asked for (the plugin manager's module
    gives a default manager's table; `ir/` cannot import plugins)."""
    global _DEFAULT_FACTORY
    _DEFAULT_FACTORY = factory


def default_prototypes() -> PrototypeRegistry:
    """The default table (made on first call): what a graph without a table of its own reads."""
    global _DEFAULT
    if _DEFAULT is None:
        if _DEFAULT_FACTORY is None:
            return _NO_PROTOTYPES
        _DEFAULT = _DEFAULT_FACTORY()
    return _DEFAULT


def prototypes_of(graph: Any) -> PrototypeRegistry:
    """The prototype table `graph` belongs to (its pipeline's plugin manager's), or the
    default table for a graph without one (built by hand, or None)."""
    table = getattr(graph, "prototypes", None)
    return table if table is not None else default_prototypes()


def get_prototype(op_type: str) -> OpPrototype:
    """The default table's prototype of `op_type` (a graph's own: `prototypes_of(graph)`)."""
    return default_prototypes().get(op_type)


def has_prototype(op_type: str) -> bool:
    """Whether the default table has a prototype for `op_type`."""
    return default_prototypes().has(op_type)


def registered_prototypes() -> Dict[str, OpPrototype]:
    """Every prototype of the default table."""
    return default_prototypes().all()
