"""The fuzz harness's driver (tools/fuzz.py): cases run in forked worker processes, in batches
per round trip, a worker that hangs, dies or is killed replaced and its case classified,
and the outcomes counted per kind and grouped into defects with one reproducer each."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from tf2ir.tools.fuzz_cases import DEFECTS, KINDS, OUTCOMES, build_corpus, make_case, save_case
from tf2ir.tools.fuzz_core import Corpus, _clean
from tf2ir.tools.fuzz_oracle import (Config, Context, Result, _describe, _on_alarm, apply_limits,
                                     execute_case, run_case, tf2ir_frame)

STAGES = ("mutate", "convert", "compile", "check")


# == workers ================================================================================
def _worker_main(conn, slot, config: Config, corpus, execute, make, workdir) -> None:
    """A worker: receive batches of (kind, index), send one Result per case."""
    try:   # die with the parent
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except Exception:
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGALRM, _on_alarm)
    log = os.open(os.path.join(workdir, "stderr.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    import faulthandler   # a fatal signal, or SIGUSR1 from the parent before it kills, logs the stack
    faulthandler.enable(sys.stderr)
    faulthandler.register(signal.SIGUSR1, sys.stderr, all_threads=False)
    import logging
    logging.disable(logging.CRITICAL)
    import warnings
    warnings.simplefilter("ignore")
    if config.saved_model_reader == "auto":   # TensorFlow's import is not a case's time or memory
        try:
            from tf2ir.parser.frozen import import_tensorflow
            import_tensorflow()
        except Exception:
            pass
    apply_limits(config.memory_mb, config.file_mb)
    ctx = Context(workdir, slot=slot)
    ctx.corpus, ctx.saved_model_reader = corpus, config.saved_model_reader
    done = 0
    while True:
        try:
            batch = conn.recv()
        except (EOFError, OSError):
            break
        if batch is None:
            break
        os.ftruncate(log, 0)
        os.lseek(log, 0, os.SEEK_SET)
        for kind, index in batch:
            slot[2] = 0
            slot[1] = time.monotonic()
            slot[0] = 1
            try:
                case = make(corpus, kind, index, config.seed)
            except Exception as exc:   # a bug of the harness itself
                result = Result(kind, index, "crash", 0.0, key=("harness", type(exc).__name__),
                                detail={**_describe(exc), "frame": "tools/fuzz.py"})
            else:
                result = run_case(case, execute, ctx, config.time_limit)
            _clean(workdir)
            slot[0] = 0
            conn.send(result)
            done += 1
            if result.outcome in ("hang", "memory") or done >= config.recycle:
                conn.close()
                os._exit(0)   # a fresh worker takes the rest of the batch
    conn.close()
    os._exit(0)


def _faulthandler_frames(text: str) -> List[traceback.FrameSummary]:
    """The last stack faulthandler logged (most recent call first) → frames, outermost first."""
    start = max(text.rfind("Current thread"), text.rfind("Fatal Python error"))
    found = re.findall(r'File "([^"]+)", line (\d+) in (\S+)', text[max(start, 0):])
    return [traceback.FrameSummary(path, int(line), name) for path, line, name in reversed(found)]


class _Worker:
    def __init__(self, ctx, config, corpus, execute, make, root: str, number: int):
        self.workdir = tempfile.mkdtemp(prefix=f"w{number}-", dir=root)
        self.slot = ctx.RawArray("d", 3)   # busy, start (monotonic), stage
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, daemon=True,
                                args=(child, self.slot, config, corpus, execute, make, self.workdir))
        self.proc.start()
        child.close()
        self.pending: deque = deque()
        self.killed_for_time = False

    def stderr_tail(self) -> str:
        try:
            with open(os.path.join(self.workdir, "stderr.log"), "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 4000))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except (OSError, ValueError):
            pass
        self.proc.join(2)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()
        import shutil
        shutil.rmtree(self.workdir, ignore_errors=True)


# == the run ================================================================================
@dataclass
class KindStats:
    cases: int = 0
    seconds: float = 0.0
    outcomes: Counter = field(default_factory=Counter)
    errors: Counter = field(default_factory=Counter)
    multiline: Counter = field(default_factory=Counter)   # multi-line error texts (examples)


@dataclass
class Group:
    outcome: str
    key: Tuple[str, str]
    detail: Dict[str, Any]
    count: int = 0
    kinds: Counter = field(default_factory=Counter)
    size: int = -1
    reproducer: Optional[str] = None
    case: Tuple[str, int] = ("", 0)

    def as_json(self) -> Dict[str, Any]:
        return {"outcome": self.outcome, "type": self.key[0], "where": self.key[1],
                "count": self.count, "kinds": dict(self.kinds), "message": self.detail.get("message"),
                "frame": self.detail.get("frame"), "function": self.detail.get("function"),
                "reproducer": self.reproducer, "case": list(self.case), "size": self.size}


class Fuzzer:
    """Runs cases in `jobs` worker processes and collects outcomes and defect groups."""

    def __init__(self, kinds: Sequence[str] = KINDS, seed: int = 0, jobs: int = 1,
                 config: Optional[Config] = None, save_dir: Optional[str] = None,
                 corpus: Optional[Corpus] = None, execute: Callable = execute_case,
                 make: Callable = make_case, progress: Optional[Callable[[str], None]] = None,
                 batch_seconds: float = 0.25):
        import multiprocessing
        self.kinds = list(kinds)
        self.seed = seed
        self.jobs = max(1, int(jobs))
        self.config = config or Config()
        self.config.seed = seed
        self.save_dir = save_dir
        self.execute, self.make = execute, make
        if corpus is None and make is make_case:
            corpus = build_corpus()
        self.corpus = corpus
        self.progress = progress
        self.batch_seconds = batch_seconds
        self.stats = {k: KindStats() for k in self.kinds}
        self.groups: Dict[Tuple[str, str, str], Group] = {}
        self.mp = multiprocessing.get_context("fork")
        self.wall = 0.0
        self.worker_deaths = 0
        self._mean = 0.01

    # -- scheduling ------------------------------------------------------------------------
    def run(self, seconds: Optional[float] = None, cases: Optional[int] = None) -> "Fuzzer":
        """Run for `seconds`, or `cases` cases of each kind (then the same cases every run)."""
        if seconds is None and cases is None:
            raise ValueError("give seconds or cases")
        if self.save_dir:
            os.makedirs(self.save_dir, exist_ok=True)
        start = time.monotonic()
        deadline = start + seconds if seconds is not None else None
        tasks = self._tasks(cases)
        retry: deque = deque()
        root = tempfile.mkdtemp(prefix="tf2ir-fuzz-", dir="/dev/shm" if os.path.isdir("/dev/shm")
                                and os.access("/dev/shm", os.W_OK) else None)
        workers: List[Optional[_Worker]] = [None] * self.jobs
        number = 0
        exhausted = False
        last_progress = start
        try:
            while True:
                now = time.monotonic()
                open_ = not exhausted and (deadline is None or now < deadline)
                for i in range(self.jobs):
                    w = workers[i]
                    wants = retry or open_
                    if w is None or not w.proc.is_alive() and not w.conn.poll():
                        if w is not None:
                            self._dead(w, retry)
                            workers[i] = w = None
                        if not wants:
                            continue
                        number += 1
                        w = workers[i] = _Worker(self.mp, self.config, self.corpus, self.execute,
                                                 self.make, root, number)
                    size = max(1, min(64, int(self.batch_seconds / max(self._mean, 1e-4))))
                    while len(w.pending) < 2 * size and (retry or open_):
                        batch = [retry.popleft() for _ in range(min(size, len(retry)))]
                        while len(batch) < size and open_ and not retry:
                            task = next(tasks, None)
                            if task is None:
                                exhausted, open_ = True, False
                                break
                            batch.append(task)
                        if not batch:
                            break
                        try:
                            w.conn.send(batch)
                        except (OSError, ValueError):
                            retry.extendleft(reversed(batch))
                            break
                        w.pending.extend(batch)
                live = [w for w in workers if w is not None]
                if not live:
                    break
                if all(not w.pending for w in live) and not retry and not open_:
                    break
                from multiprocessing.connection import wait
                wait([w.conn for w in live] + [w.proc.sentinel for w in live], timeout=0.2)
                for i, w in enumerate(workers):
                    if w is None:
                        continue
                    self._drain(w)
                    if w.slot[0] == 1 and self.config.time_limit and \
                            time.monotonic() - w.slot[1] > self._hard_limit():
                        w.killed_for_time = True
                        os.kill(w.proc.pid, signal.SIGUSR1)   # faulthandler: where it is stuck
                        time.sleep(0.3)
                        w.proc.kill()
                        w.proc.join()
                    if not w.proc.is_alive():
                        self._drain(w)
                        self._dead(w, retry)
                        workers[i] = None
                if self.progress and time.monotonic() - last_progress >= 10:
                    last_progress = time.monotonic()
                    self.progress(self._progress_line(last_progress - start))
        except KeyboardInterrupt:
            if self.progress:
                self.progress("interrupted; reporting what ran")
        finally:
            for w in workers:
                if w is not None:
                    self._drain(w)
                    w.stop()
            import shutil
            shutil.rmtree(root, ignore_errors=True)
            self.wall += time.monotonic() - start
        return self

    def _hard_limit(self) -> float:
        if self.config.kill_after:
            return self.config.kill_after
        return 2 * (self.config.time_limit or 0) + 5

    def _tasks(self, cases: Optional[int]):
        index = 0
        while cases is None or index < cases:
            for kind in self.kinds:
                yield kind, index
            index += 1

    def _drain(self, w: _Worker) -> None:
        while True:
            try:
                if not w.conn.poll():
                    return
                result = w.conn.recv()
            except (EOFError, OSError):
                return
            if w.pending and w.pending[0] == (result.kind, result.index):
                w.pending.popleft()
            self.record(result)

    def _dead(self, w: _Worker, retry: deque) -> None:
        """A worker ended: the case it was running (if any) is classified, the rest retried."""
        w.proc.join()
        code = w.proc.exitcode
        if w.pending and (w.slot[0] == 1 or w.killed_for_time or code != 0):
            kind, index = w.pending.popleft()
            self.worker_deaths += 1
            stage = STAGES[int(w.slot[2])] if 0 <= int(w.slot[2]) < len(STAGES) else "?"
            tail = w.stderr_tail()
            seconds = time.monotonic() - w.slot[1] if w.slot[0] == 1 else 0.0
            result = Result(kind, index, "crash", seconds)
            where, function = tf2ir_frame(_faulthandler_frames(tail))
            where = f"stage {stage}" if where.startswith("(") else where
            if w.killed_for_time:
                result.outcome, result.key = "hang", ("killed", where)
                message = f"killed after {seconds:.0f} s in stage {stage} (SIGALRM did not stop it)"
            else:
                name = signal.Signals(-code).name if code is not None and code < 0 else f"exit {code}"
                oom = code == -signal.SIGKILL or re.search(r"bad_alloc|MemoryError|Cannot allocate|"
                                                           r"out of memory", tail)
                if oom:
                    result.outcome = "memory"
                elif code == -signal.SIGABRT:
                    result.outcome = "abort"
                elif stage == "check":
                    result.outcome = "invalid"
                result.key = (f"worker {name}", where)
                message = f"worker died ({name}) in stage {stage}"
            result.detail = {"type": result.key[0], "message": message, "frame": where,
                             "function": function, "traceback": tail[-3000:]}
            self.record(result)
        retry.extendleft(reversed(w.pending))
        w.pending.clear()
        w.stop()

    # -- results ---------------------------------------------------------------------------
    def record(self, result: Result) -> None:
        stats = self.stats.setdefault(result.kind, KindStats())
        stats.cases += 1
        stats.seconds += result.seconds
        stats.outcomes[result.outcome] += 1
        self._mean = 0.98 * self._mean + 0.02 * result.seconds
        if result.error:
            stats.errors[result.error] += 1
            if result.multiline:
                stats.multiline[result.error] += 1
        if result.outcome not in DEFECTS:
            return
        key = (result.outcome,) + tuple(result.key)
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = Group(result.outcome, tuple(result.key), result.detail or {})
        group.count += 1
        group.kinds[result.kind] += 1
        if self.save_dir and (group.size < 0 or 0 < result.size < group.size or not result.size):
            if result.size or group.size < 0:
                self._save(group, result)

    def _save(self, group: Group, result: Result) -> None:
        try:
            case = self.make(self.corpus, result.kind, result.index, self.seed)
        except Exception:
            return
        slug = re.sub(r"[^A-Za-z0-9_.]+", "-", "-".join((group.outcome,) + group.key)).strip("-")
        import hashlib
        digest = hashlib.sha1(repr((group.outcome,) + group.key).encode()).hexdigest()[:6]
        base = os.path.join(self.save_dir, f"{slug[:80]}-{digest}")
        group.reproducer = save_case(case, base)
        group.size, group.case = case.size, (case.kind, case.index)
        group.detail = result.detail or group.detail
        sidecar = {**group.as_json(), "seed": self.seed, "origin": case.origin,
                   "mutations": case.mutations, "kind": case.kind, "special": case.special, "traceback": group.detail.get("traceback", ""),
                   "replay": f"python -m tf2ir.tools.fuzz --replay {group.reproducer}"}
        with open(base + ".json", "w", encoding="utf-8") as f:
            json.dump(sidecar, f, indent=2)

    # -- reporting -------------------------------------------------------------------------
    def defects(self) -> int:
        return sum(s.outcomes[o] for s in self.stats.values() for o in DEFECTS)

    def _progress_line(self, elapsed: float) -> str:
        total = sum(s.cases for s in self.stats.values())
        counts = Counter()
        for s in self.stats.values():
            counts.update(s.outcomes)
        parts = " ".join(f"{o} {counts[o]}" for o in OUTCOMES if counts[o])
        return f"{elapsed:7.0f} s  {total} cases ({total / max(elapsed, 1e-9):.0f}/s)  {parts}  " \
               f"groups {len(self.groups)}"

    def report(self) -> Dict[str, Any]:
        kinds = {}
        total = KindStats()
        for kind, s in self.stats.items():
            kinds[kind] = {"cases": s.cases, "case_seconds": round(s.seconds, 3),
                           "cases_per_second": round(s.cases / s.seconds, 1) if s.seconds else None,
                           "outcomes": {o: s.outcomes[o] for o in OUTCOMES},
                           "top_errors": s.errors.most_common(12),
                           "multiline_errors": sum(s.multiline.values()),
                           "multiline_examples": s.multiline.most_common(5)}
            total.cases += s.cases
            total.seconds += s.seconds
            total.outcomes.update(s.outcomes)
        groups = sorted(self.groups.values(), key=lambda g: (DEFECTS.index(g.outcome), -g.count))
        return {"seed": self.seed, "jobs": self.jobs, "wall_seconds": round(self.wall, 1),
                "time_limit": self.config.time_limit, "memory_mb": self.config.memory_mb,
                "file_mb": self.config.file_mb, "save_dir": self.save_dir,
                "cases_per_second_wall": round(total.cases / self.wall, 1) if self.wall else None,
                "kinds": kinds,
                "total": {"cases": total.cases, "outcomes": {o: total.outcomes[o] for o in OUTCOMES}},
                "worker_deaths": self.worker_deaths,
                "groups": [g.as_json() for g in groups]}
