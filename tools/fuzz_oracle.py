"""The fuzz harness's oracle (tools/fuzz.py): one case run in process the way `tf2ir convert`,
`tf2ir compile` or (through the modes) `tf2ir batch` runs it, under a time limit and
resource limits, and classified as an outcome (ok, error, crash, hang, memory, invalid,
corrupt, escape) with the innermost tf2ir frame it failed in."""

from __future__ import annotations

import os
import re
import signal
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from tf2ir.tools.fuzz_cases import ROOT, Case
from tf2ir.tools.fuzz_core import (OUTPUT_NAME, BatchInternalError, CaseTimeout, Corpus, Escape,
                                   InvalidModel, SilentCorruption, _first_line, check_model_file)

DEFAULT_TIME_LIMIT = 10.0
DEFAULT_MEMORY_MB = 2048
DEFAULT_FILE_MB = 512


# == limits ================================================================================
@dataclass
class Config:
    seed: int = 0
    time_limit: Optional[float] = DEFAULT_TIME_LIMIT
    memory_mb: Optional[int] = DEFAULT_MEMORY_MB
    file_mb: Optional[int] = DEFAULT_FILE_MB
    recycle: int = 20000            # a worker is replaced after this many cases
    saved_model_reader: str = "native"   # savedmodel cases: TF2IR_SAVED_MODEL_READER (or auto)
    kill_after: Optional[float] = None   # SIGKILL a case after this long (None: 2 × limit + 5)


# == running one case =======================================================================
FUZZ_MAX_TENSOR_BYTES = 256 << 20


class Context:
    """What a worker keeps between cases: one Pipeline (one PluginManager), a work folder,
    and the shared slot where it posts the running case's stage."""

    def __init__(self, workdir: str, manager=None, slot=None):
        from tf2ir.parser.pipeline import Options, Pipeline
        # Compact constants may expand to --max-tensor-bytes (1 GiB by default); a fuzz worker
        # has a 2 GB address-space budget, so it converts with a smaller documented limit.
        self.pipeline = Pipeline(manager, Options(max_tensor_bytes=FUZZ_MAX_TENSOR_BYTES))
        self.workdir = workdir
        self.slot = slot
        self.corpus: Optional[Corpus] = None           # the worker's corpus (seeds for baselines)
        self.saved_model_reader = "native"             # TF2IR_SAVED_MODEL_READER for savedmodel

    def stage(self, index: int) -> None:
        if self.slot is not None:
            self.slot[2] = index


def execute_case(case: Case, ctx: Context) -> None:
    """What `tf2ir convert` (.pb, .pbtxt) or `tf2ir compile` (.ir) does with the case's
    files, in process; then the written model is checked. A SavedModel case runs as
    `tf2ir convert DIR` (tools/fuzz_saved_model.py), a manifest case as `tf2ir batch`
    (tools/fuzz_manifest.py)."""
    if case.kind == "savedmodel":
        from tf2ir.tools.fuzz_saved_model import execute_saved_model
        return execute_saved_model(case, ctx)
    if case.kind == "manifest":
        from tf2ir.tools.fuzz_manifest import execute_manifest
        return execute_manifest(case, ctx)
    base = os.path.join(ctx.workdir, "case")
    for suffix, data in case.files.items():
        with open(base + suffix, "wb") as f:
            f.write(data)
    model = base + next(iter(case.files))
    out = os.path.join(ctx.workdir, OUTPUT_NAME)
    ctx.stage(1)
    if model.endswith(".ir"):
        from tf2ir.ir.infer import infer_graph
        from tf2ir.ir.text import load
        graph = load(model)
        infer_graph(graph, model=model)
    else:
        graph, _ = ctx.pipeline.convert_file(model)
    ctx.stage(2)
    ctx.pipeline.compile(graph, out, model=model)
    ctx.stage(3)
    check_model_file(out)


@dataclass
class Result:
    kind: str
    index: int
    outcome: str
    seconds: float
    size: int = 0
    key: Tuple[str, str] = ("", "")          # defects: (exception type or class, where)
    detail: Optional[Dict[str, Any]] = None  # defects: message, frame, function, traceback
    error: Optional[str] = None              # clean errors: the message, normalized
    multiline: bool = False                  # clean errors: str(error) is not one line


_ALARM: Dict[str, Any] = {"fired": False, "stack": None}


def _on_alarm(signum, frame):
    _ALARM["fired"] = True
    _ALARM["stack"] = traceback.extract_stack(frame)
    raise CaseTimeout()


def normalize(message: str, limit: int = 90) -> str:
    """A message with names, numbers and paths blanked, for grouping."""
    message = _first_line(message, 400)
    message = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", message)
    message = re.sub(r"/[^\s,:]+", "PATH", message)
    message = re.sub(r"(?<![\w.])-?\d+(\.\d+)?(e[-+]?\d+)?\b", "N", message)
    return message[:limit]


# The harness's own files (its frames are not tf2ir's; the modes' frames are)
_HARNESS = tuple(os.path.join("tools", n) for n in (
    "fuzz.py", "fuzz_core.py", "fuzz_mutate.py", "fuzz_seeds.py", "fuzz_cases.py",
    "fuzz_oracle.py", "fuzz_driver.py", "fuzz_mutate_graph.py", "fuzz_mutate_ir.py"))
_HARNESS_FILES = tuple(os.path.join(ROOT, n) for n in _HARNESS)
_OUTSIDE = tuple(os.path.join(ROOT, d) + os.sep for d in (".venv", "tests", "build", ".git"))


def tf2ir_frame(frames) -> Tuple[str, str]:
    """The innermost frame in tf2ir's own code: ("parser/attrs.py:57", function)."""
    for frame in reversed(list(frames)):
        if frame.filename.startswith("<"):   # <string>, <frozen ...>: generated code
            continue
        path = os.path.abspath(frame.filename)
        rel = None
        if path.startswith(ROOT + os.sep) and not path.startswith(_OUTSIDE) and \
                path not in _HARNESS_FILES:
            rel = os.path.relpath(path, ROOT)
        elif f"{os.sep}site-packages{os.sep}tf2ir{os.sep}" in path and \
                not path.endswith(_HARNESS):
            rel = path.split(f"{os.sep}site-packages{os.sep}tf2ir{os.sep}", 1)[1]
        if rel is not None:
            return f"{rel}:{frame.lineno}", frame.name
    return "(outside tf2ir)", ""


def _describe(exc: BaseException, frames=None, full: bool = False) -> Dict[str, Any]:
    frames = traceback.extract_tb(exc.__traceback__) if frames is None else frames
    where, function = tf2ir_frame(frames)
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    if not full and len(text) > 6000:
        text = "…\n" + text[-6000:]
    return {"type": type(exc).__name__, "message": _first_line(str(exc)), "frame": where,
            "function": function, "traceback": text}


def run_case(case: Case, execute: Callable, ctx: Context, time_limit: Optional[float],
             full_traceback: bool = False) -> Result:
    """Run one case under the time limit and classify what happened."""
    import errno

    from tf2ir.ir.errors import ConversionError
    start = time.perf_counter()
    _ALARM.update(fired=False, stack=None)
    outcome, exc_seen = "ok", None
    try:
        if time_limit:
            signal.setitimer(signal.ITIMER_REAL, time_limit)
        try:
            execute(case, ctx)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except CaseTimeout as exc:
        outcome, exc_seen = "hang", exc
    except InvalidModel as exc:
        outcome, exc_seen = "invalid", exc
    except SilentCorruption as exc:
        outcome, exc_seen = "corrupt", exc
    except Escape as exc:
        outcome, exc_seen = "escape", exc
    except ConversionError as exc:
        outcome, exc_seen = "error", exc
    except MemoryError as exc:
        outcome, exc_seen = "memory", exc
    except OSError as exc:
        limited = exc.errno in (errno.EFBIG, errno.ENOSPC, errno.ENOMEM)
        outcome, exc_seen = ("memory" if limited else "crash"), exc
    except BaseException as exc:   # noqa: B036 - SystemExit and KeyboardInterrupt are crashes too
        outcome, exc_seen = "crash", exc
    seconds = time.perf_counter() - start
    result = Result(case.kind, case.index, outcome, seconds, case.size)
    if _ALARM["fired"]:   # the timeout may have been caught and turned into something else
        result.outcome = "hang"
        frames = _ALARM["stack"] or []
        detail = _describe(exc_seen or CaseTimeout(), frames, full_traceback)
        detail.update(type="timeout", message=f"still running after {time_limit:g} s")
        detail["traceback"] = "".join(traceback.format_list(frames[-25:]))
        result.key, result.detail = ("timeout", detail["frame"]), detail
        return result
    leftovers = _leftovers(case, ctx, outcome == "ok")
    if leftovers and outcome in ("ok", "error"):
        what = "an error" if outcome == "error" else "success"
        result.outcome = "invalid"
        result.detail = {"type": "leftover", "message": f"{', '.join(leftovers)} left behind after "
                         f"{what}", "frame": "", "function": "", "traceback": ""}
        result.key = ("leftover", f"after {what}: {', '.join(sorted(set(_suffix(n) for n in leftovers)))}")
        return result
    if outcome == "error":
        result.error = normalize(getattr(exc_seen, "message", str(exc_seen)))
        result.multiline = len(str(exc_seen).splitlines()) > 1   # the CLI prints one line
        if full_traceback:   # a replay shows the text itself
            result.error = str(exc_seen)
    elif outcome in ("invalid", "corrupt", "escape"):
        message = str(exc_seen)
        kind = {"invalid": "checker", "corrupt": "silent corruption", "escape": "escape"}[outcome]
        result.detail = {"type": kind, "message": message, "frame": "", "function": "",
                         "traceback": ""}
        result.key = (kind, normalize(message, 120))
    elif isinstance(exc_seen, BatchInternalError):
        result.detail = {"type": f"batch internal error {exc_seen.kind}",
                         "message": _first_line(str(exc_seen)), "frame": "tools/batch_convert.py",
                         "function": "convert_one", "traceback": ""}
        result.key = (result.detail["type"], normalize(str(exc_seen).split(":", 2)[-1], 60))
    elif outcome != "ok":
        detail = _describe(exc_seen, full=full_traceback)
        if isinstance(exc_seen, OSError) and outcome == "memory":
            detail["type"] = f"OSError({errno.errorcode.get(exc_seen.errno, exc_seen.errno)})"
        result.key, result.detail = (detail["type"], detail["frame"]), detail
    return result


def _suffix(name: str) -> str:
    return re.sub(r"^[^.]*", "*", name)


def _leftovers(case: Case, ctx: Context, success: bool) -> List[str]:
    try:
        names = os.listdir(ctx.workdir)
    except OSError:
        return []
    expected = {("case" + s).split("/")[0] for s in case.files} | {"stderr.log"}
    expected |= {("case" + s).split("/")[0] for s in case.special}
    if case.kind == "savedmodel":
        expected.add("canary.txt")
    if success:
        expected.add(OUTPUT_NAME)
    return sorted(n for n in names if n not in expected)


def _address_space() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def apply_limits(memory_mb: Optional[int], file_mb: Optional[int]) -> None:
    """RLIMIT_AS: the process's address space now plus `memory_mb` (a worker forked from a
    large parent still gets the same room); RLIMIT_FSIZE: `file_mb` per written file."""
    import resource
    if memory_mb:
        limit = _address_space() + (int(memory_mb) << 20)
        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    if file_mb:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # a write past the limit: EFBIG
        limit = int(file_mb) << 20
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
