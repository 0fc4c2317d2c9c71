"""Does `tf2ir check` predict `tf2ir convert`? Both run on the same graphs and must agree.

    python -m tf2ir.tools.checkagree conformance [-k EXPR]   # every graph the suite converts
    python -m tf2ir.tools.checkagree zoo [NAME ...]          # bench transformers, keras zoo
    python -m tf2ir.tools.checkagree model.pb [...]          # given models (any kind convert takes)

For one graph and one set of options, `check` (its dry run, `tools.check.support_report`) and
`convert` (the pipeline's conversion, then the compile and onnx.checker into a temporary
directory) each run with a fresh pipeline. They agree when `check` exits with the status
`convert` exits with (0 exactly when `convert` succeeds) and, when `convert` fails, `check`'s
error names the same node and op type as `convert`'s error line. Whether the two error lines
are identical is counted too.

`agreeing_every_conversion()` makes every `Pipeline.convert_graph_def` in the process (the
conformance harness's conversions, `convert_file`'s) first run this agreement on a copy of
its graph: the `conformance` mode runs the conformance suite under it (pytest plugin
`-p tf2ir.tools.checkagree`), and tests/tools/test_check_predicts_convert.py covers a sample
of it in CI. The exit status is 1 when any graph disagrees.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Iterator, List, Optional, Sequence

from tf2ir.ir.errors import ConversionError, ExitStatus, escape
from tf2ir.tools.bench_models import zoo_files


@dataclass
class Outcome:
    """How one command ends: its exit status and the node and op type its error names."""
    status: int
    node: str = ""
    op_type: str = ""
    line: str = ""          # the error line (without "tf2ir: error: ")


@dataclass
class Agreement:
    name: str
    check: Outcome
    convert: Outcome
    seconds: float = 0.0
    options: str = ""

    @property
    def agrees(self) -> bool:
        if self.check.status != self.convert.status:
            return False
        return self.convert.status == ExitStatus.OK or (
            (self.check.node, self.check.op_type) == (self.convert.node, self.convert.op_type))

    @property
    def same_line(self) -> bool:
        return self.check.line == self.convert.line

    def describe(self) -> str:
        def text(o: Outcome) -> str:
            return f"exit {o.status}" + (f" ({o.line})" if o.line else "")
        return f"{self.name}{self.options}: check {text(self.check)}; convert {text(self.convert)}"


def _internal(exc: Exception, model: str) -> Outcome:
    """The command line's line for an exception that is not a ConversionError."""
    return Outcome(ExitStatus.FAILED, line=f"internal error while handling {escape(model)}: "
                                          f"{type(exc).__name__}: {escape(exc)} (run with -v "
                                          "for the traceback)")


def _copy(graph_def):
    if hasattr(graph_def, "CopyFrom"):
        copy = type(graph_def)()
        copy.CopyFrom(graph_def)
        return copy
    return graph_def


def _pipeline(manager, options):
    from tf2ir.parser.pipeline import Pipeline
    return Pipeline(manager, dataclasses.replace(options))


def convert_outcome(graph_def, model: str, manager, options, outputs=None) -> Outcome:
    """`convert` of a loaded graph: map, then compile and check into a removed directory."""
    try:
        pipeline = _pipeline(manager, options)
        graph, _ = pipeline.convert_graph_def(_copy(graph_def), model, outputs)
        with tempfile.TemporaryDirectory(prefix="tf2ir-agree-") as directory:
            pipeline.compile(graph, os.path.join(directory, "model.onnx"), model=model)
    except ConversionError as exc:
        return Outcome(exc.exit_code, exc.node or "", exc.op_type or "", str(exc))
    except Exception as exc:   # noqa: BLE001 - the command line's internal error
        return _internal(exc, model)
    return Outcome(ExitStatus.OK)


def check_outcome(graph_def, model: str, manager, options, outputs=None) -> Outcome:
    """`check` of a loaded graph: its exit status and the node and op type it names."""
    from tf2ir.tools.check import support_report
    try:
        pipeline = _pipeline(manager, options)
        report = support_report(pipeline, _copy(graph_def), model, outputs)
    except ConversionError as exc:   # what check prints as one line, as convert does
        return Outcome(exc.exit_code, exc.node or "", exc.op_type or "", str(exc))
    except Exception as exc:   # noqa: BLE001
        return _internal(exc, model)
    return Outcome(report.exit_status, report.error_node, report.error_op_type,
                   report.convert_error)


def agree_graph_def(graph_def, model: str, manager=None, options=None, outputs=None,
                    name: Optional[str] = None) -> Agreement:
    from tf2ir.parser.pipeline import Options
    from tf2ir.plugins.manager import PluginManager
    manager = manager if manager is not None else PluginManager()
    options = options if options is not None else Options()
    start = time.perf_counter()
    quiet = _quiet()
    try:
        checked = check_outcome(graph_def, model, manager, options, outputs)
        converted = convert_outcome(graph_def, model, manager, options, outputs)
    finally:
        _restore(quiet)
    return Agreement(name or model, checked, converted, time.perf_counter() - start,
                     _options_text(options))


def agree_file(path: str, manager=None, options=None) -> Agreement:
    """The agreement on a model file (a load failure is the same line for both commands)."""
    from tf2ir.parser.pipeline import Options, Pipeline
    options = options if options is not None else Options()
    try:
        graph_def, outputs = Pipeline(manager, dataclasses.replace(options)).load(path)
    except ConversionError as exc:
        failed = Outcome(exc.exit_code, exc.node or "", exc.op_type or "", str(exc))
        return Agreement(path, failed, failed)
    return agree_graph_def(graph_def, path, manager, options, options.outputs or outputs)


def _options_text(options) -> str:
    parts = []
    if options.input_shapes:
        dims = {k: ",".join("?" if d is None else str(d) for d in v)
                for k, v in options.input_shapes.items()}
        parts.append("--inputs " + ";".join(f"{k}:{v}" for k, v in dims.items()))
    for key in ("outputs", "fusion", "passes", "fallback"):
        value = getattr(options, key)
        if value:
            parts.append(f"--{key} {value}")
    return f" [{' '.join(parts)}]" if parts else ""


def _quiet():
    log = logging.getLogger("tf2ir")
    quiet, log.disabled = log.disabled, True    # notes and warnings come twice otherwise
    return quiet


def _restore(quiet) -> None:
    logging.getLogger("tf2ir").disabled = quiet


# -- every conversion in the process -----------------------------------------------------------
RESULTS: List[Agreement] = []        # what agreeing_every_conversion() saw (the pytest plugin's)
_BUSY: List[bool] = []


@contextlib.contextmanager
def agreeing_every_conversion(results: Optional[List[Agreement]] = None,
                              ) -> Iterator[List[Agreement]]:
    """While active, every `Pipeline.convert_graph_def` first runs `agree_graph_def` on a copy
    of its graph, with its pipeline's plugins and options; then the conversion runs as asked."""
    from tf2ir.parser.pipeline import Pipeline
    results = RESULTS if results is None else results
    original = Pipeline.convert_graph_def

    def convert_graph_def(self, graph_def, model, outputs=None):
        if not _BUSY:
            _BUSY.append(True)
            try:
                results.append(agree_graph_def(graph_def, model, self.manager, self.options,
                                               outputs, name=_case_name(model)))
            finally:
                _BUSY.pop()
        return original(self, graph_def, model, outputs)

    Pipeline.convert_graph_def = convert_graph_def    # type: ignore[method-assign]
    try:
        yield results
    finally:
        Pipeline.convert_graph_def = original     # type: ignore[method-assign]


def _case_name(model: str) -> str:
    """The running test's id (the conformance harness's models are temporary files)."""
    test = os.environ.get("PYTEST_CURRENT_TEST", "")
    return test.rsplit(" (", 1)[0] if test else model


_ACTIVE: List = []


def pytest_configure(config) -> None:
    """As a pytest plugin (-p tf2ir.tools.checkagree): check every conversion of the run."""
    manager = agreeing_every_conversion()
    manager.__enter__()
    _ACTIVE.append(manager)


def pytest_terminal_summary(terminalreporter) -> None:
    terminalreporter.write_line(summary(RESULTS))


def pytest_unconfigure(config) -> None:
    while _ACTIVE:
        _ACTIVE.pop().__exit__(None, None, None)


def summary(results: Sequence[Agreement], examples: int = 20) -> str:
    bad = [r for r in results if not r.agrees]
    failing = sum(r.convert.status != ExitStatus.OK for r in results)
    lines = [f"check vs convert: {len(results)} graphs, {len(results) - len(bad)} agree, "
             f"{len(bad)} disagree; convert fails on {failing} (check predicts "
             f"{sum(r.agrees and r.convert.status != ExitStatus.OK for r in results)}), "
             f"identical error lines on {sum(r.same_line for r in results)}; "
             f"{sum(r.seconds for r in results):.1f} s"]
    lines += [f"  DISAGREE {r.describe()}" for r in bad[:examples]]
    if len(bad) > examples:
        lines.append(f"  ... and {len(bad) - examples} more")
    return "\n".join(lines)


# -- the command line --------------------------------------------------------------------------
def _files(paths: Sequence[str]) -> List[Agreement]:
    results = []
    for path in paths:
        results.append(agree_file(path))
        r = results[-1]
        print(f"{'ok ' if r.agrees else 'BAD'} {r.describe()} ({r.seconds:.1f} s)", flush=True)
    return results


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tf2ir.tools.checkagree",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("what", nargs="+", help="conformance | zoo [NAME ...] | model files")
    parser.add_argument("-k", default=None, help="pytest -k expression (conformance)")
    parser.add_argument("--model-dir", default=os.path.join(tempfile.gettempdir(), "tf2ir-models"))
    parser.add_argument("--json", default=None, help="write the results here")
    args = parser.parse_args(argv)
    mode, rest = args.what[0], args.what[1:]
    start = time.perf_counter()
    if mode == "conformance":
        import pytest
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        pytest.main([os.path.join(here, "tests", "conformance"), "-q", "-p",
                     "tf2ir.tools.checkagree", "-p", "no:cacheprovider"]
                    + (["-k", args.k] if args.k else []))
        from tf2ir.tools import checkagree as plugin     # (this file runs as __main__)
        results = plugin.RESULTS
    elif mode == "zoo":
        from tf2ir.tools import bench_models
        os.makedirs(args.model_dir, exist_ok=True)
        names = rest or list(bench_models.MODELS) + ["MobileNetV3Small", "ResNet50"]
        results = _files(zoo_files(names, args.model_dir))
    else:
        results = _files(args.what)
    print(summary(results, examples=1000) + f"; total {time.perf_counter() - start:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([dict(dataclasses.asdict(r), agrees=r.agrees) for r in results], f, indent=1)
    return 0 if all(r.agrees for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
