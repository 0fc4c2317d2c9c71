"""Worker processes for `tf2ir batch` (DESIGN decision 10): each runs one task at a time, a
task that runs past its time limit is stopped with its worker, and no worker outlives the
parent.

A worker dies with its parent three ways: on Linux the kernel kills it when the process that
started it ends (prctl PR_SET_PDEATHSIG; with the forkserver start method that is the fork
server, which itself ends with the parent); a watchdog thread ends it when the parent's
sentinel pipe closes (any platform; needs the GIL); and an idle worker ends when its task
pipe closes. The parent stops its workers whenever it leaves `run` (done, an error, a
signal): SIGTERM first (a worker's handler unwinds the task, so its temporaries are
removed), SIGKILL after a grace period.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from tf2ir.tools import signals

GRACE_S = 2.0        # how long a worker may take to stop after SIGTERM before SIGKILL
PR_SET_PDEATHSIG = 1


@dataclass
class Outcome:
    """How one task ended: `value` is the task function's result when `status` is "done";
    else "timeout" (stopped at its time limit), "crashed" (its worker died) or "error"
    (the task raised: `value` says what)."""
    status: str
    value: Any = None
    seconds: float = 0.0


def context():
    """forkserver where there is one (a clean process per worker, fast), else spawn."""
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


# -- in the worker -----------------------------------------------------------------------
def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        wait([parent.sentinel])      # readable when the parent has ended
        signals.clean_up()
        os._exit(128 + signal.SIGTERM)
    threading.Thread(target=watch, name="tf2ir-parent-watchdog", daemon=True).start()


def _worker(conn, func: Callable, warm_up: Optional[Callable]) -> None:
    """A worker's loop: receive (index, args), send ("done", index, func(*args))."""
    signals.ignore_interrupts()      # Ctrl-C reaches the process group; the parent stops us
    signals.install([s for s in signals.HANDLED if s != signal.SIGINT])
    _die_with_parent()
    try:
        if warm_up is not None:
            warm_up()                # imports: not counted against a task's time limit
        conn.send(("ready", None, None))
        while True:
            try:
                task = conn.recv()
            except (EOFError, OSError):
                return               # the parent is gone
            if task is None:
                return
            index, args = task
            try:
                value = func(*args)
            except Exception as exc:
                conn.send(("error", index, f"{type(exc).__name__}: {exc}"))
                continue
            except (SystemExit, KeyboardInterrupt) as exc:
                conn.send(("error", index, f"{type(exc).__name__}: {exc}"))
                continue
            conn.send(("done", index, value))
            if signals.received() is not None:   # raised where it could not propagate
                raise signals.received()
    except signals.Interrupted as exc:
        signals.clean_up()
        os._exit(exc.exit_code)
    except (EOFError, OSError, BrokenPipeError):
        return


# -- in the parent -----------------------------------------------------------------------
class _Worker:
    def __init__(self, ctx, func, warm_up):
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker, args=(child, func, warm_up), daemon=True,
                                   name="tf2ir-worker")
        self.process.start()
        child.close()
        self.ready = False
        self.task: Optional[int] = None
        self.started = 0.0

    def stop(self, grace: float = GRACE_S) -> None:
        """End the worker: SIGTERM (it removes its temporaries), SIGKILL after `grace`."""
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(grace)
            if self.process.is_alive():
                self.process.kill()
        self.process.join(grace)
        self.conn.close()


def run(func: Callable, tasks: Sequence[Tuple], workers: int, timeout: Optional[float] = None,
        on_outcome: Callable[[int, Outcome], None] = lambda index, outcome: None,
        warm_up: Optional[Callable] = None) -> Dict[int, Outcome]:
    """Run `func(*task)` for every task in at most `workers` worker processes; return the
    outcomes by task index. A task running longer than `timeout` seconds (None: no limit)
    is stopped with its worker, and a new worker takes the next task."""
    ctx = context()
    pending = list(range(len(tasks)))[::-1]
    outcomes: Dict[int, Outcome] = {}
    pool: List[_Worker] = []
    count = max(1, min(workers, len(tasks)))

    def finish(worker: _Worker, outcome: Outcome) -> None:
        index = worker.task
        worker.task = None
        if index is not None:
            outcome.seconds = time.monotonic() - worker.started
            outcomes[index] = outcome
            on_outcome(index, outcome)

    def retire(worker: _Worker, status: str) -> None:
        if worker.task is None and not worker.ready:
            raise RuntimeError("a worker process ended while starting "
                               f"(exit status {worker.process.exitcode})")
        finish(worker, Outcome(status))
        worker.stop()
        pool.remove(worker)

    try:
        while pending or any(w.task is not None for w in pool):
            while len(pool) < min(count, len(pending) + sum(w.task is not None for w in pool)):
                pool.append(_Worker(ctx, func, warm_up))
            for worker in pool:
                if worker.ready and worker.task is None and pending:
                    worker.task = pending.pop()
                    worker.started = time.monotonic()
                    worker.conn.send((worker.task, tasks[worker.task]))
            now = time.monotonic()
            deadlines = [w.started + timeout - now for w in pool
                         if timeout is not None and w.task is not None]
            ready = wait([w.conn for w in pool] + [w.process.sentinel for w in pool],
                         timeout=max(0.0, min(deadlines)) if deadlines else None)
            for worker in list(pool):
                if worker.conn in ready:
                    try:
                        kind, _, value = worker.conn.recv()
                    except (EOFError, OSError):
                        retire(worker, "crashed")
                        continue
                    if kind == "ready":
                        worker.ready = True
                    else:
                        finish(worker, Outcome("done" if kind == "done" else "error", value))
                elif worker.process.sentinel in ready:
                    retire(worker, "crashed")
                elif (timeout is not None and worker.task is not None
                      and time.monotonic() - worker.started >= timeout):
                    retire(worker, "timeout")
    finally:
        for worker in pool:          # done, failed or interrupted: no worker runs on
            try:
                if worker.task is None and worker.process.is_alive():
                    worker.conn.send(None)
            except OSError:
                pass
        deadline = time.monotonic() + 0.5
        for worker in pool:
            if worker.task is None:
                worker.process.join(max(0.0, deadline - time.monotonic()))
            worker.stop()
    return outcomes
