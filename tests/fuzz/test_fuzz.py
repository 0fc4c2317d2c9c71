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
KIND_CASES = {"savedmodel": 300, "manifest": 150}   # a few seconds each
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
def _saved_model_seeds():
    from tf2ir.tools import fuzz_saved_model
    try:
        fuzz_saved_model.build_seeds()
    except Exception as exc:   # no TensorFlow to make them with
        pytest.skip(f"no SavedModel seeds: {exc}")
    return fuzz_saved_model.load_seeds()


@pytest.mark.parametrize("kind", fuzz.KINDS)
def test_short_seeded_run_finds_no_defect(kind, tmp_path):
    """CASES mutated inputs of `kind` (the same ones every run) through convert/compile (a
    SavedModel directory: convert; a manifest: batch) in a worker process: every outcome is
    ok or a clean ConversionError; no silent corruption, no file outside -o."""
    if kind == "savedmodel":
        _saved_model_seeds()
    cases = KIND_CASES.get(kind, CASES)
    save = _save_dir()
    report_file = tmp_path / "report.json"
    proc = _run_cli("--cases", str(cases), "--kind", kind, "--seed", str(SEED), "--time-limit", "5",
                    "--save", save, "--json", str(report_file), "-q")
    assert report_file.exists(), proc.stderr[-3000:]
    report = json.loads(report_file.read_text())
    assert report["kinds"][kind]["cases"] == cases
    outcomes = report["total"]["outcomes"]
    defects = {o: outcomes[o] for o in fuzz.DEFECTS if outcomes[o]}
    if not defects:
        shutil.rmtree(save, ignore_errors=True)   # nothing to reproduce
    assert not defects, (f"{kind}: {defects} in {cases} cases (seed {SEED}); replay with "
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
    _saved_model_seeds()
    corpus = fuzz.build_corpus()
    for kind in fuzz.KINDS:
        first = [fuzz.make_case(corpus, kind, i, 7) for i in range(40)]
        again = [fuzz.make_case(corpus, kind, i, 7) for i in range(40)]
        assert [c.files for c in first] == [c.files for c in again]
        assert len({repr(c.files) for c in first}) > 30    # and they differ from each other
        other = [fuzz.make_case(corpus, kind, i, 8) for i in range(40)]
        assert [c.files for c in other] != [c.files for c in first]
    assert set(fuzz.make_case(corpus, "ir", 3, 7).files) <= {".ir", ".ir.weights"}
    # every part of a SavedModel is mutated, and every way a manifest is written occurs
    ops = " ".join(m for i in range(300) for m in fuzz.make_case(corpus, "savedmodel", i, 7).mutations)
    for what in ("pb:", "struct:", "index:entry.", "index:key:", "shard:", "special:", "assets:"):
        assert what in ops, what
    made = [fuzz.make_case(corpus, "manifest", i, 7) for i in range(300)]
    assert {c.mutations[0] for c in made} == {"json", "yaml", "yml", "txt"}
    assert {c.origin for c in made} == {"generated", "mutated"}
    texts = b"".join(next(iter(c.files.values())) for c in made)
    for piece in (b"../", b"@ROOT@/", b"\\u0000", b"*l8", b"!!python", b"escape/"):
        assert piece in texts, piece


def test_cases_are_the_same_in_another_process():
    """The corpus's GraphDefs are serialized deterministically: protobuf writes map fields
    (node attributes) in an order of its own per process, so the same seed gave other pb and
    pbtxt cases in another run and a reproducer's seed and index did not name its case."""
    script = ("import hashlib, sys; from tf2ir.tools import fuzz; c = fuzz.build_corpus(); "
              "print(hashlib.sha256(repr([fuzz.make_case(c, k, i, 7).files "
              "for k in ('pb', 'pbtxt', 'ir') for i in range(30)]).encode()).hexdigest())")
    digests = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              check=True, env={**os.environ, "PYTHONHASHSEED": str(seed)}
                              ).stdout.strip() for seed in (1, 2)}
    assert len(digests) == 1, digests


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
    # 8 GB, far over the 256 MB the worker may add (1 GB once fitted: after a long test run,
    # a worker forked from the big pytest process found room for it and was killed filling it)
    np.ones(1 << 33, np.uint8)


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


def _abort(case, ctx):
    os.abort()                     # what a C++ std::terminate ends in


BEHAVIOURS = [  # (execute, expected outcome, expected key type)
    (_ok, "ok", ""), (_error, "error", ""), (_crash, "crash", "TypeError"),
    (_sleep, "hang", "timeout"), (_ok, "ok", ""), (_swallow, "hang", "timeout"),
    (_stuck, "hang", "killed"), (_error, "error", ""), (_memory, "memory", "MemoryError"),
    (_segfault, "crash", "worker SIGSEGV"), (_invalid, "invalid", "checker"),
    (_leftover, "invalid", "leftover"), (_exit, "crash", "SystemExit"), (_ok, "ok", ""),
    (_abort, "abort", "worker SIGABRT"), (_ok, "ok", ""),
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
    assert report["total"]["outcomes"] == {"ok": 4, "error": 2, "crash": 3, "hang": 3,
                                           "memory": 1, "abort": 1, "invalid": 2, "corrupt": 0,
                                           "escape": 0}
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


# -- the SavedModel and manifest kinds classify ----------------------------------------------------
def _seed_case(seeds, name, mutations, special=None):
    from tf2ir.tools.fuzz_saved_model import PREFIX
    files = {PREFIX + k: v for k, v in dict(seeds)[name].items()}
    return fuzz.Case("savedmodel", 0, files, name, mutations, special or {})


def _context(tmp_path, seeds):
    ctx = fuzz.Context(str(tmp_path))
    ctx.corpus = fuzz.Corpus([], [], [], [], [], seeds)
    return ctx


def test_savedmodel_unmutated_seeds_convert_natively(tmp_path):
    """The seeds convert with the native reader (vocab too: it reads a SavedModel's one
    vocabulary-file asset into its table as TensorFlow does)."""
    seeds = _saved_model_seeds()
    assert {n for n, _ in seeds} == {"dense", "conv", "mixed", "table", "vocab"}
    ctx = _context(tmp_path, seeds)
    for name, _ in seeds:
        result = fuzz.run_case(_seed_case(seeds, name, []), fuzz.execute_case, ctx, 30)
        fuzz._clean(str(tmp_path))
        assert result.outcome == "ok", (name, result)


def test_savedmodel_silent_corruption_and_leaks_are_defects(tmp_path, monkeypatch):
    """A checkpoint-only mutation that converts to a model unlike the seed's is `corrupt`;
    the same model after a saved_model.pb mutation is not; a model holding the canary file's
    bytes is `escape`. (The conversion is replaced: it writes what the test says.)"""
    from tf2ir.tools import fuzz_saved_model as fsm
    seeds = _saved_model_seeds()
    ctx = _context(tmp_path, seeds)
    real = fsm._convert
    payload = {"extra": None}

    def convert(ctx_, directory, out):
        real(ctx_, directory, out)
        if payload["extra"] is not None:   # a model unlike the seed's: one more initializer
            import numpy as np
            import onnx
            from onnx import numpy_helper
            model = onnx.load(out)
            model.graph.initializer.append(numpy_helper.from_array(
                np.frombuffer(payload["extra"], np.uint8), "fuzz_extra"))
            onnx.save(model, out)
    monkeypatch.setattr(fsm, "_convert", convert)
    outcomes = []
    for extra, mutations in ((None, ["shard:flip"]), (b"x", ["shard:flip"]), (b"x", ["index:flip"]),
                             (b"x", ["pb:flip", "shard:flip"]), (fsm.CANARY, ["pb:flip"])):
        payload["extra"] = extra
        result = fuzz.run_case(_seed_case(seeds, "dense", mutations), fuzz.execute_case, ctx, 30)
        fuzz._clean(str(tmp_path))
        outcomes.append((result.outcome, result.key[0]))
    assert outcomes == [("ok", ""), ("corrupt", "silent corruption"), ("corrupt", "silent corruption"),
                        ("ok", ""), ("escape", "escape")]


def test_savedmodel_special_files_are_made(tmp_path):
    from tf2ir.tools import fuzz_saved_model as fsm
    root = fsm.materialize(str(tmp_path / "case"), {"saved_model.pb": b"x"},
                           {"variables/variables.index": "fifo", "variables/a": "devzero",
                            "assets/v.txt": "outside", "assets/w.txt": "canary"})
    import stat as st
    assert st.S_ISFIFO(os.lstat(os.path.join(root, "variables/variables.index")).st_mode)
    assert os.readlink(os.path.join(root, "variables/a")) == "/dev/zero"
    assert open(os.path.join(root, "assets/v.txt"), "rb").read().startswith(fsm.CANARY)
    assert os.readlink(os.path.join(root, "assets/w.txt")) == fsm.CANARY_ABS


def test_index_table_round_trips_and_entry_edits_keep_it_readable():
    """The harness rewrites variables.index as a table the reader accepts (block checksums
    right), so entry edits reach the BundleEntryProto code instead of the table checks."""
    from tf2ir.tools import fuzz_saved_model as fsm
    seeds = dict(_saved_model_seeds())
    data = seeds["mixed"][fsm.INDEX]
    entries = fsm.read_table(data)
    assert entries[0][0] == b"" and len(entries) >= 4
    assert fsm.read_table(fsm.write_table(entries)) == entries
    import random
    rng = random.Random(5)
    for _ in range(50):
        mutated, what = fsm.mutate_index_entries(data, rng)
        assert what.startswith(("entry.", "header.", "key:")), what
        assert fsm.read_table(mutated)


def _manifest_case(text, fmt="json"):
    from tf2ir.tools import fuzz_manifest as fm
    corpus = fuzz.build_corpus()
    import random
    files, special, _ = fm.make_manifest_case(corpus, random.Random(0), [])
    first = next(iter(files))
    files = {first.rsplit("/", 1)[0] + f"/list.{fmt}": text.encode(),
             **{k: v for k, v in files.items() if k != first}}
    return fuzz.Case("manifest", 0, files, "test", [fmt], special)


def test_manifest_writes_outside_out_are_escapes(tmp_path, monkeypatch):
    """A valid manifest converts (ok); a job whose output resolves outside -o (through `..`,
    an absolute path or the symlinked folder) is `escape` before anything is written, also
    when batch's own checks are bypassed; a file changed outside out/ is `escape`."""
    from tf2ir.tools import batch
    from tf2ir.tools import fuzz_manifest as fm
    ctx = fuzz.Context(str(tmp_path))
    ok = fuzz.run_case(_manifest_case('[{"path": "a.pb", "output": "sub/x.onnx"}, "b.pb"]'),
                       fuzz.execute_case, ctx, 30)
    fuzz._clean(str(tmp_path))
    assert ok.outcome == "ok", ok
    for check in ("_refuse_outputs", "refuse_escapes"):   # batch's own checks, bypassed
        monkeypatch.setattr(batch, check, lambda *args, **kwargs: None, raising=False)
    real_jobs = batch.jobs_from_manifest

    def unchecked(path, out_dir, defaults):   # what batch did before it refused such outputs
        jobs = real_jobs(os.path.join(os.path.dirname(path), "plain.json"), out_dir, defaults)
        for job in jobs:
            job.output = os.path.join(out_dir, json.load(open(path))[0]["output"])
        return jobs
    for output in ("../victim.onnx", "@ROOT@/outside/abs.onnx", "escape/x.onnx"):
        case = _manifest_case(json.dumps([{"path": "a.pb", "output": output}]))
        case.files[next(iter(case.files)).replace("list.json", "plain.json")] = b'["a.pb"]'
        monkeypatch.setattr(batch, "jobs_from_manifest", unchecked)
        result = fuzz.run_case(case, fuzz.execute_case, ctx, 30)
        monkeypatch.setattr(batch, "jobs_from_manifest", real_jobs)
        assert (result.outcome, result.key[0]) == ("escape", "escape"), (output, result)
        assert "would write outside -o" in result.detail["message"]
        assert not any("abs.onnx" in f or f == "x.onnx" for _, _, fs in os.walk(tmp_path) for f in fs)
        fuzz._clean(str(tmp_path))
    real_convert = batch.convert_one

    def writes_beside(job, *args):            # a sidecar or temporary written outside -o
        open(os.path.join(os.path.dirname(os.path.dirname(job.output)), "outside", "leak"), "w").close()
        return real_convert(job, *args)
    monkeypatch.setattr(batch, "convert_one", writes_beside)
    result = fuzz.run_case(_manifest_case('["a.pb"]'), fuzz.execute_case, ctx, 30)
    assert result.outcome == "escape" and "/outside/leak" in result.detail["message"], result
    assert fm.PLACEHOLDER == "@ROOT@"


def test_manifest_internal_errors_are_crashes(tmp_path, monkeypatch):
    from tf2ir.tools import batch
    ctx = fuzz.Context(str(tmp_path))
    monkeypatch.setattr(batch, "Pipeline", None, raising=False)

    def broken(job, *args):
        return batch.Result(job.name, job.model, job.output, "failed",
                            message="internal error: KeyError: 'x'", exit_code=1)
    monkeypatch.setattr(batch, "convert_one", broken)
    result = fuzz.run_case(_manifest_case('["a.pb"]'), fuzz.execute_case, ctx, 30)
    assert (result.outcome, result.key[0]) == ("crash", "batch internal error KeyError"), result


def test_outcomes_the_modes_raise_are_caught_when_the_harness_runs_as_main(tmp_path, monkeypatch):
    """`python -m tf2ir.tools.fuzz` runs fuzz.py as __main__, a second copy of the module
    beside any tf2ir.tools.fuzz: its run_case classifies the exceptions the modes raise
    (they live in tools/fuzz_core.py, which both copies and the modes import)."""
    import importlib.util

    from tf2ir.tools import fuzz_core, fuzz_manifest, fuzz_saved_model
    spec = importlib.util.spec_from_file_location("_fuzz_as_main", fuzz.__file__)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "_fuzz_as_main", module)   # what python -m does for __main__
    spec.loader.exec_module(module)
    copy = vars(module)
    assert copy["main"] is not fuzz.main   # a second copy (run_case: tools/fuzz_oracle.py's)
    assert (fuzz_manifest.Escape, fuzz_saved_model.Escape) == (fuzz_core.Escape, fuzz_core.Escape)
    ctx = copy["Context"](str(tmp_path))
    missing = str(tmp_path / "missing.onnx")
    for raise_, expected in (
            (lambda: (_ for _ in ()).throw(fuzz.Escape("outside")), ("escape", "escape")),
            (lambda: (_ for _ in ()).throw(fuzz.SilentCorruption("weights")),
             ("corrupt", "silent corruption")),
            (lambda: (_ for _ in ()).throw(fuzz.BatchInternalError("internal error: KeyError: 'x'")),
             ("crash", "batch internal error KeyError")),
            (lambda: fuzz_manifest.check_model_file(missing), ("invalid", "checker"))):
        result = copy["run_case"](copy["Case"]("manifest", 0, {}), lambda case, ctx: raise_(), ctx, 30)
        assert (result.outcome, result.key[0]) == expected, result


def test_harness_frames_are_not_tf2ir_frames():
    """A crash's group names the innermost frame in tf2ir's code, past the harness's own
    files (fuzz.py and the modules it is split into, fuzz_core.py, fuzz_mutate*.py); the
    modes' frames count."""
    import traceback

    def frame(rel):
        return traceback.FrameSummary(os.path.join(ROOT, *rel.split("/")), 7, "f")
    for harness in ("tools/fuzz.py", "tools/fuzz_core.py", "tools/fuzz_mutate.py",
                    "tools/fuzz_mutate_graph.py", "tools/fuzz_mutate_ir.py", "tools/fuzz_seeds.py",
                    "tools/fuzz_cases.py", "tools/fuzz_oracle.py", "tools/fuzz_driver.py"):
        assert fuzz.tf2ir_frame([frame("parser/attrs.py"), frame(harness)]) == ("parser/attrs.py:7", "f")
    assert fuzz.tf2ir_frame([frame("parser/attrs.py"), frame("tools/fuzz_manifest.py")]) == (
        "tools/fuzz_manifest.py:7", "f")
    assert fuzz.tf2ir_frame([frame("parser/attrs.py"), frame("tools/fuzz_saved_model_mutate.py")]) == (
        "tools/fuzz_saved_model_mutate.py:7", "f")


@pytest.mark.parametrize("kind", ["savedmodel", "manifest"])
def test_folder_reproducers_save_load_and_replay(kind, tmp_path):
    """A SavedModel or manifest case is saved as a folder with its special entries (FIFOs,
    symlinks) in the .json beside it; loading gives the same case; --replay runs it."""
    if kind == "savedmodel":
        _saved_model_seeds()
    corpus = fuzz.build_corpus(kinds=(kind,))
    case = next(c for c in (fuzz.make_case(corpus, kind, i, 4) for i in range(200)) if c.special)
    path = fuzz.save_case(case, str(tmp_path / "repro"))
    assert os.path.isdir(path) and path.endswith("." + kind)
    loaded = fuzz.load_case(path)
    assert (loaded.kind, loaded.files, loaded.special) == (kind, case.files, case.special)
    assert next(iter(loaded.files)) == next(iter(case.files)) or kind == "savedmodel"
    out = _run_cli("--replay", path, timeout=120)
    assert out.returncode in (0, 1) and f"{path}: " in out.stdout, out.stdout + out.stderr
