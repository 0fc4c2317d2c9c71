"""The one pass manager, for the three kinds of pass (DESIGN decision 7).

A pass is one `PassRecord`: its name, its kind (`fusion` on the TF graph before mapping,
`ir` on the IR graph, `onnx` on the lowered ONNX graph), the function that runs it (it
returns how many rewrites it made), the passes it runs after or before, whether it is on
by default, and whether it repeats until it changes nothing. The run order is computed
from the after/before declarations (ties keep the order the records were given in). One
switch grammar serves `--fusion` and `--passes`: comma-separated words `on:NAME`,
`off:NAME`, `on:all`, `off:all`, applied left to right, so the last word wins.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from tf2ir.ir.errors import ConversionError, ExitStatus

log = logging.getLogger("tf2ir")

KINDS = ("fusion", "ir", "onnx")
MAX_REPEATS = 8          # a repeating pass stops after this many rounds even if it still rewrites

Switches = Union[None, str, Iterable[str], Dict[str, bool]]
CheckFn = Callable[[Any], None]


@dataclass(frozen=True)
class PassRecord:
    """One pass: what it is called, what it works on, when it runs and whether it is on."""

    name: str
    kind: str
    run: Callable[[Any], int]
    description: str = ""
    after: Tuple[str, ...] = ()
    before: Tuple[str, ...] = ()
    default: bool = True
    repeat: bool = False      # run again while it rewrites (up to MAX_REPEATS rounds)
    required: bool = False    # part of the conversion itself: cannot be switched off
    plugin: str = ""          # who provides it (fusion passes come from plugins)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"pass {self.name}: kind must be one of {', '.join(KINDS)}")


def order_passes(records: Sequence[PassRecord]) -> List[PassRecord]:
    """The records in an order that honours every `after` and `before` (names of passes
    that are not given are ignored); ties keep the given order."""
    from tf2ir.ir.toposort import CycleError, find_cycle, lexicographic_order
    by_name: Dict[str, PassRecord] = {}
    for record in records:
        if record.name in by_name:
            first = by_name[record.name]
            raise ConversionError(f"pass {record.name} is provided by {first.plugin or 'tf2ir'} "
                                  f"and {record.plugin or 'tf2ir'}; pass names must be unique",
                                  plugin=record.plugin or None)
        by_name[record.name] = record
    index = {name: i for i, name in enumerate(by_name)}
    edges = []
    for record in records:
        edges += [(a, record.name) for a in record.after if a in by_name]
        edges += [(record.name, b) for b in record.before if b in by_name]
    try:
        return [by_name[n] for n in lexicographic_order(by_name, edges, key=index.__getitem__)]
    except CycleError:
        cycle = " -> ".join(a for a, _ in find_cycle(by_name, edges))
        raise ConversionError(f"passes must run before each other in a cycle: {cycle}") from None


def resolve_switches(records: Sequence[PassRecord], switches: Switches = None,
                     option: str = "--passes") -> Dict[str, bool]:
    """Each pass's on/off state: its default, changed by `switches` word by word (the last
    word wins). `switches` is the option's text(s), or a {name: bool} dict ('all' allowed,
    applied before the names).
    A bad word or an unknown name is a usage error naming `option`."""
    state = {r.name: r.default for r in records}
    required = {r.name for r in records if r.required}
    if switches is None:
        return state
    if isinstance(switches, dict):   # no word order: 'all' first, then the named passes
        words = sorted(((name, bool(on)) for name, on in switches.items()),
                       key=lambda word: word[0] != "all")
    else:
        texts = [switches] if isinstance(switches, str) else list(switches)
        words = [_parse_word(word.strip(), option) for text in texts for word in text.split(",")]
    known = ", ".join(list(state) + ["all"])
    for name, on in words:
        if name == "all":
            state.update({n: on for n in state if n not in required})
        elif name not in state:
            raise ConversionError(f"{option} names unknown pass {name!r}; known: {known}",
                                  exit_code=ExitStatus.USAGE)
        elif name in required and not on:
            raise ConversionError(f"{option}: pass {name!r} is part of the conversion and "
                                  "cannot be switched off", exit_code=ExitStatus.USAGE)
        else:
            state[name] = on
    return state


def _parse_word(word: str, option: str) -> Tuple[str, bool]:
    state, sep, name = word.partition(":")
    if not sep or state not in ("on", "off") or not name.strip():
        raise ConversionError(f"bad {option} value {word!r}: expected on:NAME or off:NAME "
                              "(comma-separated; NAME 'all' is every pass; the last word wins)",
                              exit_code=ExitStatus.USAGE)
    return name.strip(), state == "on"


class PassManager:
    """Runs the enabled passes of one kind in their computed order over one graph.

    `check`, when given, is called with the graph after every pass that rewrote it (the
    `--check-passes` option); a failure names the pass that broke the graph."""

    def __init__(self, records: Sequence[PassRecord], switches: Switches = None,
                 option: str = "--passes", check: Optional[CheckFn] = None):
        self.records = order_passes(records)
        self.state = resolve_switches(self.records, switches, option)
        self.check = check
        self.counts: Dict[str, int] = {}
        self.times: Dict[str, float] = {}

    @property
    def enabled(self) -> List[PassRecord]:
        return [r for r in self.records if self.state[r.name]]

    def run(self, graph: Any, kind: Optional[str] = None) -> Dict[str, int]:
        """Run the enabled passes (of `kind`, when given) over `graph` in place; return the
        rewrites per pass that ran."""
        counts: Dict[str, int] = {}
        for record in self.enabled:
            if kind is not None and record.kind != kind:
                continue
            start = time.perf_counter()
            total = 0
            for _ in range(MAX_REPEATS if record.repeat else 1):
                rewrites = record.run(graph) or 0
                total += rewrites
                if not rewrites:
                    break
                if self.check is not None:
                    self._check(graph, record)
            counts[record.name] = total
            self.times[record.name] = self.times.get(record.name, 0.0) + time.perf_counter() - start
            log.debug("pass %-10s %5d rewrites %.3f s", record.name, total, self.times[record.name])
        for name, count in counts.items():
            self.counts[name] = self.counts.get(name, 0) + count
        return counts

    def _check(self, graph: Any, record: PassRecord) -> None:
        assert self.check is not None    # run() calls this only when there is a check
        try:
            self.check(graph)
        except ConversionError as exc:
            raise ConversionError(f"the graph is invalid after {record.kind} pass "
                                  f"{record.name}: {exc}", plugin=record.plugin or None) from exc
        except Exception as exc:
            raise ConversionError(f"the graph is invalid after {record.kind} pass "
                                  f"{record.name}: {type(exc).__name__}: {exc}",
                                  plugin=record.plugin or None) from exc


def describe_passes(records: Sequence[PassRecord]) -> str:
    """One line per pass in run order, for --help."""
    return "\n".join(f"  {r.name:<10} {'on ' if r.default else 'off'}  "
                     f"{'(always) ' if r.required else ''}{r.description}"
                     for r in order_passes(records))
