"""Three-way shape runs of the conformance suite (issue 20): every `check_op` case run with
its placeholder shapes as written, with every placeholder dimension unknown (`dims`) and with
every placeholder of unknown rank (`rank`), each compared with TensorFlow over the same
relaxed specs (tests/conformance/harness.py, TF2IR_CONFORMANCE_SHAPES).

    python -m tf2ir.tools.shapes3                         # all three modes, whole suite
    python -m tf2ir.tools.shapes3 --mode dims -k gather   # one mode, a pytest -k selection
    python -m tf2ir.tools.shapes3 --files test_image.py test_conv.py --json out.json

Each mode runs pytest in a child process (a crash ends one mode, not the tool) with this
module as a plugin, which sorts every check_op case into one outcome:

  pass        converted, ran and matched TensorFlow
  refusal     a clean ConversionError: tf2ir's own, one line, naming the node and op
  tf-refuses  TensorFlow cannot trace the function over the relaxed specs (nothing to compare)
  failure     anything else, by class: `internal` (a lowering or inference raised something
              other than a ConversionError: arithmetic on None ...), `checker` (onnx.checker
              rejected the model), `ort` (onnxruntime refused to load or run it), `mismatch`
              (different values or shapes from TensorFlow), or the exception's type

Cases that never call check_op (error and inference unit tests) are not counted. With
`--mode all` the relaxed modes run only the cases that called check_op in the written run.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional

OUT_ENV = "TF2IR_SHAPES3_OUT"           # where the plugin writes its outcomes (JSON)
ONLY_ENV = "TF2IR_SHAPES3_ONLY"         # a file of node ids: run only these
MODES = ("written", "dims", "rank")

_OUTCOMES: Dict[str, dict] = {}


# -- classification ---------------------------------------------------------------------------
def _shorten(text: str) -> str:
    """A message made into a class: first line, quoted names and numbers blanked."""
    text = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", text)
    text = re.sub(r"\b\d+\b", "N", text)
    return text[:110]


def classify(exc: BaseException) -> tuple:
    """(outcome, failure class, detail) of a case that raised `exc`."""
    from tf2ir.ir.errors import ConversionError
    if isinstance(exc, ConversionError):
        cause = exc.__cause__ or exc.__context__
        while isinstance(cause, ConversionError) and (cause.__cause__ or cause.__context__):
            cause = cause.__cause__ or cause.__context__
        op = exc.op_type or "?"
        if cause is not None and not isinstance(cause, ConversionError):
            return "failure", f"internal {type(cause).__name__} [{op}]: {_shorten(str(cause))}", str(exc)
        if "onnx.checker" in exc.message:
            return "failure", f"checker [{op}]: {_shorten(exc.message.split(':', 1)[-1])}", str(exc)
        return "refusal", f"[{op}] {_shorten(exc.message)}", str(exc)
    name = type(exc).__name__
    if isinstance(exc, AssertionError):
        return "failure", f"mismatch: {_shorten(str(exc))}", str(exc)[:300]
    if "onnxruntime" in type(exc).__module__ or name in ("Fail", "InvalidArgument",
                                                         "RuntimeException", "InvalidGraph"):
        return "failure", f"ort {name}: {_shorten(str(exc))}", str(exc)[:300]
    return "failure", f"{name}: {_shorten(str(exc))}", str(exc)[:300]


# -- the pytest plugin (-p tf2ir.tools.shapes3) ------------------------------------------------
def pytest_collection_modifyitems(config, items) -> None:
    only = os.environ.get(ONLY_ENV)
    if not only:
        return
    with open(only) as f:
        wanted = set(f.read().split("\n"))
    keep = [item for item in items if item.nodeid in wanted]
    config.hook.pytest_deselected(items=[i for i in items if i.nodeid not in wanted])
    items[:] = keep


def _calls() -> list:
    from tests.conformance import harness
    return harness.CHECK_OP_CALLS


def pytest_runtest_setup(item) -> None:
    item._shapes3_calls = len(_calls())


def pytest_runtest_makereport(item, call) -> None:
    if call.when != "call":
        return
    called = len(_calls()) > getattr(item, "_shapes3_calls", 0)
    if not called:
        return
    if call.excinfo is None:
        _OUTCOMES[item.nodeid] = {"outcome": "pass"}
        return
    exc = call.excinfo.value
    import _pytest.outcomes as outcomes
    if isinstance(exc, outcomes.Skipped):
        reason = str(exc)
        _OUTCOMES[item.nodeid] = {"outcome": "tf-refuses" if "TF refuses" in reason else "skip",
                                  "detail": reason[:200]}
        return
    if isinstance(exc, outcomes.XFailed) or item.get_closest_marker("xfail"):
        _OUTCOMES[item.nodeid] = {"outcome": "skip", "detail": "xfail"}
        return
    outcome, klass, detail = classify(exc)
    _OUTCOMES[item.nodeid] = {"outcome": outcome, "class": klass, "detail": detail}


def pytest_unconfigure(config) -> None:
    path = os.environ.get(OUT_ENV)
    if path:
        with open(path, "w") as f:
            json.dump(_OUTCOMES, f, indent=0)


# -- the runner -------------------------------------------------------------------------------
def run_mode(mode: str, tests: List[str], k: Optional[str], only: Optional[List[str]],
             directory: str, quiet: bool = True) -> Dict[str, dict]:
    """Run the conformance `tests` in shape `mode` in a child pytest; its outcomes."""
    out = os.path.join(directory, f"{mode}.json")
    env = dict(os.environ, TF2IR_CONFORMANCE_SHAPES=mode, **{OUT_ENV: out})
    if only is not None:
        only_file = os.path.join(directory, f"{mode}.only")
        with open(only_file, "w") as f:
            f.write("\n".join(only))
        env[ONLY_ENV] = only_file
    command = [sys.executable, "-m", "pytest", *tests, "-q", "-p", "tf2ir.tools.shapes3",
               "-p", "no:cacheprovider", "--no-header", "-rN", "--tb=no"]
    if k:
        command += ["-k", k]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    subprocess.run(command, cwd=root, env=env, check=False,
                   stdout=subprocess.DEVNULL if quiet else None,
                   stderr=subprocess.DEVNULL if quiet else None)
    if not os.path.exists(out):
        return {"<crash>": {"outcome": "failure", "class": "the pytest run crashed"}}
    with open(out) as f:
        return json.load(f)


def summary(mode: str, outcomes: Dict[str, dict], examples: int = 1) -> str:
    """Counts per outcome and per failure (and refusal) class, with example cases."""
    counts = collections.Counter(o["outcome"] for o in outcomes.values())
    lines = [f"{mode:8s} cases {len(outcomes):5d}: " + ", ".join(
        f"{key} {counts.get(key, 0)}" for key in ("pass", "refusal", "failure", "tf-refuses", "skip"))]
    for outcome in ("failure", "refusal"):
        classes = collections.defaultdict(list)
        for nodeid, o in outcomes.items():
            if o["outcome"] == outcome:
                classes[o.get("class", "?")].append(nodeid)
        for klass, ids in sorted(classes.items(), key=lambda kv: -len(kv[1])):
            names = ", ".join(i.split("::", 1)[-1] for i in ids[:examples])
            lines.append(f"    {outcome} {len(ids):4d}  {klass}  (e.g. {names})")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tf2ir.tools.shapes3",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", default="all",
                        help="written, dims, rank, several joined by commas, or all (default)")
    parser.add_argument("-k", default=None, help="pytest -k expression")
    parser.add_argument("--files", nargs="*", default=None,
                        help="conformance test files (default: all of tests/conformance)")
    parser.add_argument("--examples", type=int, default=2, help="example cases per class")
    parser.add_argument("--json", default=None, help="write every case's outcome here")
    parser.add_argument("-v", "--verbose", action="store_true", help="show pytest's output")
    args = parser.parse_args(argv)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    base = os.path.join(root, "tests", "conformance")
    tests = [os.path.join(base, f) for f in args.files] if args.files else [base]
    modes = MODES if args.mode == "all" else tuple(args.mode.split(","))
    if not set(modes) <= set(MODES):
        parser.error(f"--mode {args.mode}: expected all or some of {', '.join(MODES)}")
    results: Dict[str, Dict[str, dict]] = {}
    with tempfile.TemporaryDirectory(prefix="tf2ir-shapes3-") as directory:
        only = None
        for mode in modes:
            start = time.perf_counter()
            results[mode] = run_mode(mode, tests, args.k, only, directory, not args.verbose)
            if mode == "written" and len(modes) > 1:
                only = sorted(results[mode])
            print(summary(mode, results[mode], args.examples)
                  + f"\n    ({time.perf_counter() - start:.0f} s)", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    failed = any(o["outcome"] == "failure" for r in results.values() for o in r.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
