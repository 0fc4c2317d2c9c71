"""The fuzzing harness (tools/fuzz.py): a short seeded run of each mutation kind must find
no crash, hang, memory blow-up or invalid model; the harness itself classifies outcomes
correctly, makes the same case from the same seed, and saves replayable reproducers.

Longer runs: python -m tf2ir.tools.fuzz --seconds 600 --seed N (see the module's docstring).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from tf2ir.ir.errors import ConversionError
from tf2ir.tools import fuzz

CASES = 500          # per kind: about 1 to 3 s of cases each
SEED = 20261124
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _save_dir() -> str:
    """Reproducers go under /tmp/fuzz/, outside the repository, one folder per run."""
    root = os.path.join(tempfile.gettempdir(), "fuzz")
    os.makedirs(root, exist_ok=True)
    return tempfile.mkdtemp(prefix="pytest-", dir=root)


def _run_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tf2ir.tools.fuzz", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


# -- the seeded run ----------------------------------------------------------------------------
@pytest.mark.parametrize("kind", fuzz.KINDS)
def test_short_seeded_run_finds_no_defect(kind, tmp_path):
    """CASES mutated inputs of `kind` (the same ones every run) through convert/compile in
    a worker process: every outcome is ok or a clean ConversionError."""
    save = _save_dir()
    report_file = tmp_path / "report.json"
    proc = _run_cli("--cases", str(CASES), "--kind", kind, "--seed", str(SEED), "--time-limit", "5",
                    "--save", save, "--json", str(report_file), "-q")
    assert report_file.exists(), proc.stderr[-3000:]
    report = json.loads(report_file.read_text())
    assert report["kinds"][kind]["cases"] == CASES
    outcomes = report["total"]["outcomes"]
    defects = {o: outcomes[o] for o in fuzz.DEFECTS if outcomes[o]}
    if not defects:
        shutil.rmtree(save, ignore_errors=True)   # nothing to reproduce
    assert not defects, (f"{kind}: {defects} in {CASES} cases (seed {SEED}); replay with "
                         f"python -m tf2ir.tools.fuzz --replay FILE\n{fuzz.format_report(report)}")
    assert outcomes["ok"] > 0, "no mutated input converted: the mutations are too destructive"


def test_seed_corpus_converts_and_passes_the_checker(tmp_path):
    """Every built seed graph converts, compiles and passes the ONNX checker, and gives an
    IR seed: mutations start from valid inputs over the op types tf2ir maps."""
    from tensorboard.compat.proto import graph_pb2
    from tf2ir.plugins.manager import PluginManager
    manager = PluginManager()
    corpus = fuzz.build_corpus(manager)
    seeds = dict(fuzz.seed_graphs())
    assert len(seeds) >= 150
    covered = set()
    ctx = fuzz.Context(str(tmp_path), manager)
    failures = []
    for name, data in seeds.items():
        graph_def = graph_pb2.GraphDef()
        graph_def.ParseFromString(data)
        covered.update(n.op for n in graph_def.node)
        case = fuzz.Case("pb", 0, {".pb": data}, name)
        result = fuzz.run_case(case, fuzz.execute_case, ctx, 30)
        fuzz._clean(str(tmp_path))
        if result.outcome != "ok":
            failures.append(f"{name}: {result.outcome} {result.error or result.detail}")
    assert not failures, "\n".join(failures)
    assert len(corpus.irs) == len(corpus.graphs)
    assert len(covered & set(manager.registry)) >= 150


def test_cases_are_reproducible_from_the_seed():
    corpus = fuzz.build_corpus()
    for kind in fuzz.KINDS:
        first = [fuzz.make_case(corpus, kind, i, 7) for i in range(40)]
        again = [fuzz.make_case(corpus, kind, i, 7) for i in range(40)]
        assert [c.files for c in first] == [c.files for c in again]
        assert len({repr(c.files) for c in first}) > 30    # and they differ from each other
        other = [fuzz.make_case(corpus, kind, i, 8) for i in range(40)]
        assert [c.files for c in other] != [c.files for c in first]
    assert set(fuzz.make_case(corpus, "ir", 3, 7).files) <= {".ir", ".ir.weights"}


# -- the harness classifies ----------------------------------------------------------------------
def _bad_onnx(path: str) -> None:
    import onnx
    from onnx import TensorProto, helper
    node = helper.make_node("NoSuchOp", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    onnx.save(helper.make_model(graph), path)


def _ok(case, ctx):
    pass


def _error(case, ctx):
    raise ConversionError("bad input", node="n")


def _crash(case, ctx):
    from tf2ir.ir.names import fresh_name
    fresh_name("x", None)          # TypeError inside tf2ir's own code


def _sleep(case, ctx):
    time.sleep(60)


def _swallow(case, ctx):
    try:
        time.sleep(60)
    except BaseException:          # code under test that catches everything
        raise ConversionError("wrapped") from None


def _stuck(case, ctx):
    signal.signal(signal.SIGALRM, signal.SIG_IGN)   # the soft limit cannot stop it
    time.sleep(60)


def _memory(case, ctx):
    import numpy as np
    np.ones(1 << 30, np.uint8)     # 1 GB, over the 256 MB the worker may add


def _segfault(case, ctx):
    os.kill(os.getpid(), signal.SIGSEGV)


def _invalid(case, ctx):
    out = os.path.join(ctx.workdir, fuzz.OUTPUT_NAME)
    _bad_onnx(out)
    fuzz.check_model_file(out)


def _leftover(case, ctx):
    with open(os.path.join(ctx.workdir, fuzz.OUTPUT_NAME + ".tmp"), "wb") as f:
        f.write(b"partial")
    raise ConversionError("failed after writing")


def _exit(case, ctx):
    sys.exit(3)


BEHAVIOURS = [  # (execute, expected outcome, expected key type)
    (_ok, "ok", ""), (_error, "error", ""), (_crash, "crash", "TypeError"),
    (_sleep, "hang", "timeout"), (_ok, "ok", ""), (_swallow, "hang", "timeout"),
    (_stuck, "hang", "killed"), (_error, "error", ""), (_memory, "memory", "MemoryError"),
    (_segfault, "crash", "worker SIGSEGV"), (_invalid, "invalid", "checker"),
    (_leftover, "invalid", "leftover"), (_exit, "crash", "SystemExit"), (_ok, "ok", ""),
]


def _synthetic_make(corpus, kind, index, seed):
    return fuzz.Case(kind, index, {".pb": b"x" * (index + 1)}, "synthetic")


def _synthetic_execute(case, ctx):
    BEHAVIOURS[case.index][0](case, ctx)


class _Recorder(fuzz.Fuzzer):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seen = {}

    def record(self, result):
        assert result.index not in self.seen, "a case ran twice"
        self.seen[result.index] = result
        super().record(result)


def test_harness_classifies_each_outcome(tmp_path):
    config = fuzz.Config(time_limit=1.0, memory_mb=256, kill_after=3.0)
    fuzzer = _Recorder(["pb"], seed=1, jobs=1, config=config, save_dir=str(tmp_path),
                       execute=_synthetic_execute, make=_synthetic_make, batch_seconds=100)
    fuzzer.run(cases=len(BEHAVIOURS))
    assert sorted(fuzzer.seen) == list(range(len(BEHAVIOURS)))   # the rest of a batch reruns
    for index, (behaviour, outcome, key) in enumerate(BEHAVIOURS):
        result = fuzzer.seen[index]
        assert (result.outcome, result.key[0]) == (outcome, key), (behaviour.__name__, result)
    crash = fuzzer.seen[2]
    assert crash.key[1].startswith("ir/names.py:") and crash.detail["function"] == "busy"
    assert fuzzer.seen[9].detail["message"].startswith("worker died (SIGSEGV)")
    assert fuzzer.seen[11].detail["message"] == "out.onnx.tmp left behind after an error"
    report = fuzzer.report()
    assert report["total"]["outcomes"] == {"ok": 3, "error": 2, "crash": 3, "hang": 3,
                                           "memory": 1, "invalid": 2}
    # one reproducer per group, with a sidecar naming how to replay it
    for group in report["groups"]:
        assert os.path.exists(group["reproducer"])
        sidecar = json.loads(open(group["reproducer"][:-3] + ".json").read())
        assert sidecar["replay"].endswith(group["reproducer"])


def test_reproducers_are_the_smallest_case_and_hold_its_bytes(tmp_path):
    corpus = fuzz.build_corpus()
    fuzzer = fuzz.Fuzzer(["pbtxt", "ir"], seed=3, jobs=2, save_dir=str(tmp_path), corpus=corpus,
                         execute=_crash)
    fuzzer.run(cases=30)
    groups = fuzzer.report()["groups"]
    assert len(groups) == 1 and groups[0]["count"] == 60
    sizes = {k: min(fuzz.make_case(corpus, k, i, 3).size for i in range(30)) for k in ("pbtxt", "ir")}
    assert groups[0]["size"] == min(sizes.values())
    kind, index = groups[0]["case"]
    saved = fuzz.load_case(groups[0]["reproducer"])
    assert saved.files == fuzz.make_case(corpus, kind, index, 3).files


def test_replay_runs_a_file_and_reports_its_outcome(tmp_path):
    good = _run_cli("--replay", os.path.join(ROOT, "tests", "data", "sample_cnn.pb"), timeout=120)
    assert good.returncode == 0 and ": ok (" in good.stdout, good.stdout + good.stderr
    bad = tmp_path / "bad.pb"
    bad.write_bytes(b"\x0a\x05\x0a\x01")
    out = _run_cli("--replay", str(bad), timeout=120)
    assert out.returncode == 0 and ": error (" in out.stdout, out.stdout + out.stderr
