"""The pass property check: every pass keeps the graph valid and its values unchanged.

    python -m tf2ir.tools.passcheck conformance [-k EXPR]   # every conformance graph
    python -m tf2ir.tools.passcheck random --count 200      # generated random graphs
    python -m tf2ir.tools.passcheck zoo [NAME ...]          # bench transformers, keras zoo
    python -m tf2ir.tools.passcheck model.pb [...]          # given frozen models

`check_passes_on_graph` compiles an IR graph twice: once with every pass off (the
reference: inlined, lowered, nothing else), once with the passes on, checking the graph after
every run of every IR and ONNX pass: `--check-passes`' check (topological order, no
dangling input, onnx's node checker, the IR prototypes), onnx.checker on the whole model
(subgraphs included), and onnxruntime's outputs on seeded random inputs against the
reference's. The first pass that breaks any of these raises `PassPropertyError` naming it.
Outputs that differ between two runs of the reference itself (random ops) are not compared;
inputs the reference cannot run on (an index out of range) leave only the structural checks.

`checking_every_compile()` makes every compilation in the process run this check first (on
a copy of its graph): the `conformance` mode runs the conformance suite under it (pytest
plugin `-p tf2ir.tools.passcheck`), and so do the tests that cover a sample of it in CI.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Sequence

import numpy as np
import onnx
from onnx import helper

from tf2ir.ir.errors import ConversionError
from tf2ir.tools.bench_models import zoo_files
from tf2ir.tools.passcheck_random import Choose, random_graph_def

RTOL, ATOL = 1e-4, 1e-5      # float outputs: |after - before| <= ATOL*max(1, scale) + RTOL*|before|
UNKNOWN_DIM = 3              # fed for a dim the model leaves open


class PassPropertyError(AssertionError):
    """A pass broke the graph: wrong order, a dangling input, a checker error or other
    values. `pass_name` is the pass; an AssertionError, so that a test expecting the
    conversion's own ConversionError does not swallow it."""

    def __init__(self, pass_name: str, kind: str, message: str):
        super().__init__(f"the graph is invalid after {kind} pass {pass_name}: {message}")
        self.pass_name = pass_name


@dataclass
class PassCheck:
    """What one graph's check did: the passes that ran (each with its rewrites), how many
    checks were made, and whether values were compared (`note` says why not)."""
    name: str
    passes: Dict[str, int] = field(default_factory=dict)
    checks: int = 0
    values_checked: bool = False
    note: str = ""
    seconds: float = 0.0


# -- assembling a model from what a pass sees --------------------------------------------------
class _Reference:
    """The reference model's interface (inputs, outputs, their types, the custom outputs'
    value_info, default-valued inputs) and its outputs on the feeds."""

    def __init__(self, model: onnx.ModelProto, defaults: Dict[str, np.ndarray]):
        self.model = model
        self.defaults = defaults
        self.feeds: Dict[str, np.ndarray] = {}
        self.outputs: Optional[List[np.ndarray]] = None
        self.stable: List[bool] = []
        self.checkable = False          # onnx.checker accepts it


def _names_read(nodes) -> set:
    from tf2ir.ir.onnx.node import read_names
    return read_names(nodes)


def assemble(nodes, initializers: Dict[str, np.ndarray], interface: onnx.ModelProto,
             defaults: Dict[str, np.ndarray]) -> onnx.ModelProto:
    """A complete model of `nodes` and the used `initializers`, with `interface`'s inputs,
    outputs and value_info (as build_model writes them) and the default-valued inputs."""
    from tf2ir.ir.onnx.opset import choose_opset
    from tf2ir.ir.onnx.writer import tensor_proto
    used = _names_read(nodes) | {o.name for o in interface.graph.output}
    inits = [tensor_proto(n, np.asarray(a)) for n, a in initializers.items() if n in used]
    inits += [tensor_proto(n, np.asarray(a)) for n, a in defaults.items()]
    produced = {o for n in nodes for o in n.output}
    infos = [v for v in interface.graph.value_info if v.name in produced]
    graph = helper.make_graph(list(nodes), interface.graph.name, list(interface.graph.input),
                              list(interface.graph.output), inits, value_info=infos)
    domains = sorted({n.domain for n in nodes if n.domain and n.domain != "ai.onnx"}
                     | {o.domain for o in interface.opset_import if o.domain})
    model = helper.make_model(graph, producer_name="tf2ir-passcheck", opset_imports=[
        helper.make_opsetid("", choose_opset(nodes))] + [helper.make_opsetid(d, 1) for d in domains])
    model.ir_version = 9
    return model


def random_feeds(model: onnx.ModelProto, seed: int = 0,
                 given: Optional[Dict[str, np.ndarray]] = None) -> Dict[str, np.ndarray]:
    """Seeded inputs for `model`'s graph inputs (not those with a default): floats uniform in
    [-2, 2), integers in [0, 3), bools half and half, short strings; open dims UNKNOWN_DIM."""
    rng = np.random.default_rng(seed)
    defaults = {i.name for i in model.graph.initializer}
    feeds = dict(given or {})
    for info in model.graph.input:
        if info.name in defaults or info.name in feeds:
            continue
        tensor = info.type.tensor_type
        dtype = helper.tensor_dtype_to_np_dtype(tensor.elem_type)
        shape = [d.dim_value if d.HasField("dim_value") else UNKNOWN_DIM
                 for d in tensor.shape.dim] if tensor.HasField("shape") else [UNKNOWN_DIM]
        if dtype == np.bool_:
            feeds[info.name] = rng.random(shape) < 0.5
        elif dtype.kind in "iu":
            feeds[info.name] = rng.integers(0, 3, size=shape).astype(dtype)
        elif dtype.kind == "f":
            feeds[info.name] = rng.uniform(-2, 2, size=shape).astype(dtype)
        elif dtype == object:
            words = np.array(["", "a", "bc", "tf2ir"], dtype=object)
            feeds[info.name] = words[rng.integers(0, 4, size=shape)]
        else:
            raise ValueError(f"no random feed for {dtype}")
    return feeds


def _run(model: onnx.ModelProto, feeds: Dict[str, np.ndarray], times: int = 1):
    """The outputs of `times` runs of one session (a random op without a seed gives other
    values each run); one run: its outputs."""
    from tf2ir.ir.onnx.runtime import InferenceSession
    session = InferenceSession(model)
    try:
        runs = [[np.asarray(a) for a in session.run(None, feeds)] for _ in range(times)]
        return runs[0] if times == 1 else runs
    finally:
        del session


def _differs(want: np.ndarray, got: np.ndarray) -> Optional[str]:
    if want.shape != got.shape or want.dtype != got.dtype:
        return f"{got.dtype}{list(got.shape)} where the reference has {want.dtype}{list(want.shape)}"
    if want.dtype.kind in "fc":
        scale = float(np.nanmax(np.abs(want))) if want.size and np.isfinite(want).any() else 1.0
        close = np.isclose(got, want, rtol=RTOL, atol=ATOL * max(1.0, scale), equal_nan=True)
        if not close.all():
            worst = np.unravel_index(np.argmin(close), close.shape)
            return f"{got[worst]!r} where the reference has {want[worst]!r} at {list(worst)}"
        return None
    if not np.array_equal(want, got):
        return "values differ from the reference's"
    return None


# -- the check ---------------------------------------------------------------------------------
class _Checker:
    """Called after every run of every pass: structure first, then values."""

    def __init__(self, ref: _Reference, result: PassCheck, values: bool):
        self.ref, self.result, self.values = ref, result, values
        self.last: Optional[bytes] = None

    def __call__(self, record, graph) -> None:
        from tf2ir.ir.graph import Graph, clone_graph
        from tf2ir.ir.onnx.compile import check_after_pass, lower_graph
        try:
            check_after_pass(graph)
        except ConversionError as exc:
            raise PassPropertyError(record.name, record.kind, str(exc)) from None
        if isinstance(graph, Graph):
            try:
                ctx = lower_graph(clone_graph(graph))
            except ConversionError:          # needs the IR folding still to come
                return
            nodes, inits, defaults = ctx.onnx.to_protos(), ctx.initializers, \
                ctx.input_defaults or {}
        else:
            nodes, inits, defaults = graph.to_protos(), graph.initializers, self.ref.defaults
        model = assemble(nodes, inits, self.ref.model, defaults)
        key = model.SerializeToString(deterministic=True)
        if key == self.last:                 # nothing changed since the last check
            return
        self.last = key
        self.result.checks += 1
        try:
            if self.ref.checkable:
                onnx.checker.check_model(model)
        except onnx.checker.ValidationError as exc:
            raise PassPropertyError(record.name, record.kind,
                                    f"onnx.checker: {str(exc).splitlines()[0]}") from None
        if not self.values or self.ref.outputs is None:
            return
        try:
            got = _run(model, self.ref.feeds)
        except Exception as exc:             # the reference ran on these feeds
            raise PassPropertyError(record.name, record.kind, "onnxruntime cannot run the "
                                    f"model: {str(exc).splitlines()[0][:300]}") from None
        for k, (want, have, stable) in enumerate(zip(self.ref.outputs, got, self.ref.stable)):
            why = _differs(want, have) if stable else None
            if why:
                name = self.ref.model.graph.output[k].name
                raise PassPropertyError(record.name, record.kind,
                                        f"output {name!r} changed: {why}")


def _checked(record, check: _Checker):
    def run(graph) -> int:
        try:
            rewrites = record.run(graph)
        except ConversionError:
            raise                           # a refusal: the plain conversion refuses too
        except Exception as exc:
            raise PassPropertyError(record.name, record.kind,
                                    f"the pass raised {type(exc).__name__}: {exc}") from exc
        check(record, graph)
        return rewrites
    return dataclasses.replace(record, run=run)


def check_passes_on_graph(graph, name: str = "model", passes=None, records=None,
                          feeds: Optional[Dict[str, np.ndarray]] = None, seed: int = 0,
                          values: bool = True) -> PassCheck:
    """Run the pass pipeline (`records`, default compile.ALL_PASSES, switched by `passes`)
    over a copy of the IR `graph`, checked after every pass run against the graph compiled
    with every pass off. Raises PassPropertyError naming the first pass that breaks it; a
    ConversionError when the graph does not compile at all."""
    from tf2ir.ir.graph import clone_graph
    from tf2ir.ir.onnx import compile as compile_module
    from tf2ir.ir.onnx.opset import all_nodes
    from tf2ir.ir.onnx.runtime import STANDARD_DOMAINS
    from tf2ir.ir.passes.manager import PassManager
    start = time.perf_counter()
    result = PassCheck(name)
    records = list(records if records is not None else compile_module.ALL_PASSES)
    # the reference: inlined and lowered, no other pass (build_model as it is unpatched)
    build_model = compile_module.build_model
    build_model = getattr(build_model, "__wrapped__", build_model)
    try:
        interface, initializers = build_model(clone_graph(graph), name, "off:all")
    except ConversionError:   # a lowering that needs IR folding (a Tensordot's run-time perm)
        interface, initializers = build_model(clone_graph(graph), name, "off:all,on:ir-fold")
        result.note = "the reference is IR-folded (it does not lower unfolded)"
    inputs = {i.name for i in interface.graph.input}
    defaults = {n: np.asarray(a) for n, a in initializers if n in inputs}
    ref = _Reference(assemble(interface.graph.node, dict(initializers), interface, {}), defaults)
    try:
        onnx.checker.check_model(ref.model)
        ref.checkable = True
    except onnx.checker.ValidationError as exc:     # not the passes' doing
        result.note = f"the reference fails onnx.checker: {str(exc).splitlines()[0][:200]}"
    if any(n.domain not in STANDARD_DOMAINS for n in all_nodes(ref.model.graph.node)):
        values = False                  # Python kernels: onnxruntime-extensions' one table
        result.note = result.note or "plugin kernels: values not compared"
    if values:
        try:
            ref.feeds = random_feeds(ref.model, seed, feeds)
            first, second = _run(ref.model, ref.feeds, times=2)
            ref.stable = [_differs(a, b) is None for a, b in zip(first, second)]
            ref.outputs = first
            result.values_checked = any(ref.stable)
            if not result.values_checked:
                result.note = "no output is deterministic"
        except Exception as exc:
            result.note = f"the reference does not run: {str(exc).splitlines()[0][:200]}"
    checker = _Checker(ref, result, values)
    manager = PassManager([_checked(r, checker) for r in records], passes)
    build_model(clone_graph(graph), name, manager=manager)
    result.passes = dict(manager.counts)
    result.seconds = time.perf_counter() - start
    return result


# -- every compilation in the process ----------------------------------------------------------
RESULTS: List[PassCheck] = []        # what checking_every_compile() saw (the pytest plugin's)
SKIPPED: List[str] = []              # graphs whose conversion fails without the passes too


@contextlib.contextmanager
def checking_every_compile(results: Optional[List[PassCheck]] = None,
                           skipped: Optional[List[str]] = None) -> Iterator[List[PassCheck]]:
    """While active, compile.build_model first runs check_passes_on_graph on a copy of its
    graph (the same pass switches); a broken pass raises PassPropertyError out of the
    compilation. A graph the check cannot compile (the conversion's own refusal) is listed
    in `skipped` and left to the real compilation."""
    from tf2ir.ir.onnx import compile as compile_module
    results = RESULTS if results is None else results
    skipped = SKIPPED if skipped is None else skipped
    original = compile_module.build_model

    def build_model(graph, model_name=None, passes=None, check_passes=False, manager=None,
                    opset=None, export=None):
        if manager is None and opset is None and (export is None or export.default):
            log = logging.getLogger("tf2ir")
            quiet, log.disabled = log.disabled, True      # the real compile logs its notes
            try:
                results.append(check_passes_on_graph(graph, model_name or graph.name, passes))
            except PassPropertyError:
                raise
            except Exception as exc:         # the real compile reports it
                skipped.append(f"{model_name}: {type(exc).__name__}: {str(exc)[:200]}")
            finally:
                log.disabled = quiet
        return original(graph, model_name, passes, check_passes, manager, opset, export)

    build_model.__wrapped__ = original     # type: ignore[attr-defined]
    compile_module.build_model = build_model
    try:
        yield results
    finally:
        compile_module.build_model = original


_ACTIVE: List = []


def pytest_configure(config) -> None:
    """As a pytest plugin (-p tf2ir.tools.passcheck): check every compilation of the run."""
    manager = checking_every_compile()
    manager.__enter__()
    _ACTIVE.append(manager)


def pytest_terminal_summary(terminalreporter) -> None:
    terminalreporter.write_line(summary(RESULTS, SKIPPED))


def pytest_unconfigure(config) -> None:
    while _ACTIVE:
        _ACTIVE.pop().__exit__(None, None, None)


def summary(results: Sequence[PassCheck], skipped: Sequence[str] = ()) -> str:
    valued = sum(r.values_checked for r in results)
    seconds = sum(r.seconds for r in results)
    rewrites: Dict[str, int] = {}
    for r in results:
        for name, count in r.passes.items():
            rewrites[name] = rewrites.get(name, 0) + count
    busy = ", ".join(f"{n} {c}" for n, c in sorted(rewrites.items(), key=lambda i: -i[1]) if c)
    return (f"pass property: {len(results)} graphs checked ({valued} with values, "
            f"{sum(r.checks for r in results)} checks, {seconds:.1f} s), "
            f"{len(skipped)} not compilable; rewrites: {busy or 'none'}")


# -- random graphs -----------------------------------------------------------------------------
def check_random_graph(choose: Choose, name: str = "random", records=None, passes=None,
                       max_ops: int = 8) -> PassCheck:
    """Build one random graph (`choose` decides), convert it and check its passes."""
    import tempfile
    from tf2ir.parser.pipeline import convert_file
    graph_def, outputs = random_graph_def(choose, max_ops)
    with tempfile.TemporaryDirectory(prefix="tf2ir-passcheck-") as directory:
        path = os.path.join(directory, f"{name}.pb")
        with open(path, "wb") as f:
            f.write(graph_def.SerializeToString())
        graph, _ = convert_file(path, outputs=[o.split(":")[0] for o in outputs])
    return check_passes_on_graph(graph, name, passes=passes, records=records)


def check_random_graphs(count: int, seed: int = 0) -> List[PassCheck]:
    results = []
    for i in range(count):
        rng = np.random.default_rng([seed, i])
        results.append(check_random_graph(lambda n: int(rng.integers(0, n)), f"random{seed}-{i}"))
    return results


# -- the command line --------------------------------------------------------------------------
def _check_files(paths: Sequence[str]) -> List[PassCheck]:
    from tf2ir.parser.pipeline import convert_file
    results = []
    for path in paths:
        graph, _ = convert_file(path)
        results.append(check_passes_on_graph(graph, path))
        print(f"ok  {path}: {results[-1].checks} checks, {results[-1].seconds:.1f} s"
              f"{'' if results[-1].values_checked else ' (no values: ' + results[-1].note + ')'}")
    return results


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tf2ir.tools.passcheck",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("what", nargs="+", help="conformance | random | zoo [NAME ...] | "
                                                "model files")
    parser.add_argument("-k", default=None, help="pytest -k expression (conformance)")
    parser.add_argument("--count", type=int, default=100, help="random graphs (random)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model-dir", default=os.path.join("/tmp", "tf2ir-models"))
    parser.add_argument("--json", default=None, help="write the results here")
    parser.add_argument("--unknown-dim", type=int, default=UNKNOWN_DIM,
                        help="fed for a dim the model leaves open (zoo images: 96 or more)")
    args = parser.parse_args(argv)
    globals()["UNKNOWN_DIM"] = args.unknown_dim
    mode, rest = args.what[0], args.what[1:]
    skipped: List[str] = SKIPPED
    start = time.perf_counter()
    try:
        if mode == "conformance":
            import pytest
            here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
            code = pytest.main([os.path.join(here, "tests", "conformance"), "-q", "-p",
                                "tf2ir.tools.passcheck", "-p", "no:cacheprovider"]
                               + (["-k", args.k] if args.k else []))
            from tf2ir.tools import passcheck as plugin     # (this file runs as __main__)
            results, skipped = plugin.RESULTS, plugin.SKIPPED
            status = int(code)
        elif mode == "random":
            results = check_random_graphs(args.count, args.seed)
            status = 0
        elif mode == "zoo":
            from tf2ir.tools import bench_models
            os.makedirs(args.model_dir, exist_ok=True)
            names = rest or list(bench_models.MODELS) + ["MobileNetV3Small", "ResNet50"]
            results = _check_files(zoo_files(names, args.model_dir))
            status = 0
        else:
            results = _check_files(args.what)
            status = 0
    except PassPropertyError as exc:
        print(f"FAILED {exc}", file=sys.stderr)
        return 1
    print(summary(results, skipped) + f"; total {time.perf_counter() - start:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([dataclasses.asdict(r) for r in results], f, indent=1)
    return status


if __name__ == "__main__":
    sys.exit(main())
